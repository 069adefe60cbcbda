"""The commands: robosim plot (PNG like the 1D Robot article's Figure 1, GIF), robosim-eval (JSON,
exit codes), robosim tasks; and the generated protocol code matching the protobuf runtime."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from google.protobuf import __version__ as protobuf_version

import robosim
from robosim import _protogen


def run(args, **kw):
    return subprocess.run([sys.executable, "-m"] + args, capture_output=True, text=True,
                          timeout=120, **kw)


def test_generated_code_matches_the_runtime():
    out = os.path.join(os.path.dirname(robosim.__file__), "_pb")
    digest, protoc = _protogen.read_stamp(out)
    proto = _protogen.find_proto()
    if proto:
        assert digest == _protogen.proto_digest(proto), "generated from the current proto"
    # protoc 35.1's code needs a protobuf 7 runtime at least 7.35.1 (its import-time check, and
    # the range pyproject.toml requires); a newer 7.x runtime serves it too
    assert protoc
    runtime = tuple(int(v) for v in protobuf_version.split(".")[:3])
    need = tuple(int(v) for v in protoc.split(".")[:2])
    assert runtime[0] == 7 and runtime[1:3] >= need, (protobuf_version, protoc)


def test_plot_writes_figure1_png_and_gif(endpoint, tmp_path):
    png, gif = tmp_path / "figure1.png", tmp_path / "finger.gif"
    r = run(["robosim.cli", "plot", "--endpoint", endpoint, "--out", str(png),
             "--gif", str(gif)])
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20000
    from PIL import Image
    with Image.open(gif) as im:
        assert im.format == "GIF" and im.n_frames > 20


def _finger_events(states):
    return [(e["kind"], e["time"], e["before"], e["after"]) for s in states for e in s["events"]]


def test_figure1_under_the_article_law_bounces_off_the_resting_object(client):
    """The 1D Robot article's Figure 1: coast into the object and bounce off it as off a wall (the
    object does not move), then push it with 2.5 N > F_static, let go and fall behind. Under
    Coulomb's law (the default) the first impact moves the object instead."""
    from robosim import plot
    states, _ = plot.figure1_run(client, article_law=True)
    older, _ = plot.figure1_run(client, seed000=True)  # the older name of article_law
    assert _finger_events(older) == _finger_events(states)
    ev = _finger_events(states)
    kinds = [k for k, *_ in ev]
    assert kinds[:2] == ["touch", "bounce"] and kinds[2] == "touch"
    _, t, before, after = ev[1]
    assert after[2] == before[2] == 0.7 and after[3] == 0.0       # the wall stays put
    assert after[1] == -0.5 * before[1]                            # v_f' = -e v_f
    assert ev[2][1] > 2.81 and "slip" in kinds and kinds[-1] == "separate"
    x_o = [s["entities"]["finger"]["state"][2] for s in states]
    assert max(x_o[:281]) == 0.7 and x_o[-1] > 1.5
    coulomb, _ = plot.figure1_run(client)
    ck = [k for k, *_ in _finger_events(coulomb)]
    assert ck[:3] == ["touch", "bounce", "slip"]                   # the free object is kicked
    assert coulomb[281]["entities"]["finger"]["state"][2] > 0.75


@pytest.mark.parametrize("flag", ["--article-law", "--seed000"])  # --seed000: the older name
def test_plot_under_the_article_law_writes_png(endpoint, tmp_path, flag):
    png = tmp_path / "article.png"
    r = run(["robosim.cli", "plot", flag, "--endpoint", endpoint, "--out", str(png)])
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20000


def test_plot_of_a_fingerpush_episode(endpoint, tmp_path):
    png = tmp_path / "push.png"
    r = run(["robosim.cli", "plot", "--endpoint", endpoint, "--env", "robosim/FingerPush-v0",
             "--seed", "3", "--out", str(png)])
    assert r.returncode == 0, r.stderr
    assert png.stat().st_size > 20000


def test_eval_writes_results(endpoint, tmp_path):
    out = tmp_path / "results.json"
    r = run(["robosim.evaluate", "--env", "robosim/FingerPush-v0", "--policy",
             "robosim.baselines:auto", "--episodes", "3", "--seed", "7", "--out", str(out),
             "--endpoint", endpoint])
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["ok"] and len(res["per_episode"]) == 3
    assert [e["seed"] for e in res["per_episode"]] == [7, 8, 9]
    assert res["summary"]["success_rate"] == 1.0
    assert res["summary"]["return"]["mean"] == pytest.approx(
        sum(e["return"] for e in res["per_episode"]) / 3)
    assert "ep" in r.stderr  # the progress bar


def test_eval_fails_loudly(endpoint, tmp_path):
    out = tmp_path / "bad.json"
    r = run(["robosim.evaluate", "--env", "robosim/FingerPush-v0", "--policy",
             "no_such_module:policy", "--episodes", "1", "--out", str(out),
             "--endpoint", endpoint])
    assert r.returncode == 1 and "no_such_module" in r.stderr
    assert not json.loads(out.read_text())["ok"]
    # a policy whose actions are out of bounds: the server's OUT_OF_RANGE, exit 1 (actions are
    # clipped by default: --env-kwargs turns that off)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = run(["robosim.evaluate", "--env", "robosim/FingerTouch-v0", "--policy",
             "policies:too_strong", "--episodes", "1", "--out", str(out), "--endpoint",
             endpoint, "--no-progress", "--env-kwargs", '{"clip_actions": false}'], env=env)
    assert r.returncode == 1 and "OUT_OF_RANGE" in r.stderr, r.stderr
    assert "OUT_OF_RANGE" in json.loads(out.read_text())["error"]
    r = run(["robosim.evaluate", "--env", "robosim/FingerTouch-v0", "--policy",
             "policies:not_finite", "--episodes", "1", "--out", str(out), "--endpoint",
             endpoint, "--no-progress"], env=env)
    assert r.returncode == 1 and "not finite" in r.stderr, r.stderr
    # a policy that raises
    r = run(["robosim.evaluate", "--env", "robosim/FingerTouch-v0", "--policy",
             "policies:broken", "--episodes", "1", "--out", str(out), "--endpoint",
             endpoint, "--no-progress"], env=env)
    assert r.returncode == 1 and "policy bug" in r.stderr


def test_tasks_command(endpoint):
    """robosim tasks prints the ids robosim-eval and gym.make take; the server comes from
    $ROBOSIM_ENDPOINT (no local server started)."""
    r = run(["robosim.cli", "tasks"], env=dict(os.environ, ROBOSIM_ENDPOINT=endpoint))
    assert r.returncode == 0, r.stderr
    ids = [l for l in r.stdout.splitlines() if l and not l.startswith(" ")]
    assert ids == ["robosim/" + t for t in robosim.TASKS]
    assert all(i in gym_registry() for i in ids)
    assert "reward: per control step" in r.stdout


def gym_registry():
    import gymnasium as gym
    return gym.registry


def test_eval_env_kwargs_obs_norm_and_endpoint_from_environment(endpoint, tmp_path):
    """--env-kwargs reach gym.make (a 5-step limit: every episode 5 long); --obs-norm feeds the
    policy (obs - mean) / sqrt(var + eps) clipped, as VecNormalize does (a policy that records
    what it sees checks it); $ROBOSIM_ENDPOINT names the server."""
    here = os.path.dirname(os.path.abspath(__file__))
    seen = tmp_path / "seen.npy"
    stats = tmp_path / "stats.npz"
    mean, var = np.arange(6.0), np.full(6, 4.0)
    np.savez(stats, mean=mean, var=var, epsilon=0.0, clip_obs=3.0)
    env = dict(os.environ, ROBOSIM_ENDPOINT=endpoint, ROBOSIM_TEST_SEEN=str(seen),
               PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "r.json"
    r = run(["robosim.evaluate", "--env", "robosim/FingerPush-v0", "--policy",
             "policies:recorder", "--episodes", "2", "--out", str(out), "--no-progress",
             "--env-kwargs", '{"max_episode_steps": 5}', "--obs-norm", str(stats)], env=env)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["endpoint"] == endpoint
    assert [e["length"] for e in res["per_episode"]] == [5, 5]
    first = np.load(seen)
    import gymnasium as gym
    e = gym.make("robosim/FingerPush-v0", endpoint=endpoint)
    try:
        raw, _ = e.reset(seed=0)
    finally:
        e.close()
    np.testing.assert_allclose(first, np.clip((raw - mean) / 2.0, -3, 3))


def test_readme_carries_the_servers_reward_text(client):
    """The rewards are documented once, in the server's task table; the Python page quotes it."""
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                          "python.md")
    text = open(readme).read()
    for task in robosim.TASKS:
        wid = client.create_world(task=task)
        reward = client.get_spec(wid)["task"]["reward"]
        client.destroy_world(wid)
        assert "- reward: " + reward in text, task
