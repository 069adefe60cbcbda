"""Motion specifications over the wire : load the examples from files, read them
back, see the evaluators' errors and controllers' outputs in the State, carry the specification
through a fork, refuse a bad document with an error naming the entity, clear it."""
import json
import os

import numpy as np
import pytest

import robosim

SPECS = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "specs")


def test_alignment_spec_runs_and_aligns(client):
    wid = client.create_world("mobile_manipulator")
    try:
        client.load_motion_spec(wid, path=os.path.join(SPECS, "dual_arm_alignment.jsonld"))
        info = client.get_motion_spec(wid)
        assert info["loaded"] and "eval-angle-alignment" in info["evaluators"]
        assert "ctrl-dist-leftarm-shoulder-ee" in info["controllers"]
        s = client.step(wid, duration=20.0)
        spec = s["spec"]
        assert spec is not None and len(spec["errors"]) == len(info["evaluators"])
        assert spec["active_motion"] == "motion-alignment"
        theta = s["entities"]["mm"]["state"][2]
        # aligned within 1 degree of facing the table (+y) after 20 s, from 0.2 rad
        assert abs(np.degrees(np.arctan2(np.sin(theta - np.pi / 2), np.cos(theta - np.pi / 2)))) < 1.0
        angle_err = spec["errors"][info["evaluators"].index("eval-angle-alignment")]
        assert abs(angle_err) < np.radians(1.0)
        # a fork carries the specification and steps on exactly as the original
        fid = client.fork_world(wid)
        a = client.step(wid, steps=50)
        b = client.step(fid, steps=50)
        assert np.array_equal(a["entities"]["mm"]["state"], b["entities"]["mm"]["state"])
        assert np.array_equal(a["spec"]["outputs"], b["spec"]["outputs"])
        client.destroy_world(fid)
        client.clear_motion_spec(wid)
        assert client.get_motion_spec(wid)["loaded"] is False
        assert client.step(wid)["spec"] is None
    finally:
        client.destroy_world(wid)


def test_bad_spec_names_the_entity(client):
    wid = client.create_world("mobile_manipulator")
    try:
        with open(os.path.join(SPECS, "single_arm.jsonld"), encoding="utf-8") as f:
            doc = json.load(f)
        for e in doc["@graph"]:
            if e["@id"] == "cstr-linvel-rightarm-ee-lateral":
                e["quantity"] = "no-such-quantity"
        with pytest.raises(robosim.RobosimError) as err:
            client.load_motion_spec(wid, doc)
        assert "cstr-linvel-rightarm-ee-lateral" in str(err.value)
        assert "no-such-quantity" in str(err.value)
        assert client.get_motion_spec(wid)["loaded"] is False
        client.load_motion_spec(wid, path=os.path.join(SPECS, "single_arm.jsonld"))
        assert client.get_motion_spec(wid)["loaded"] is True
    finally:
        client.destroy_world(wid)


def test_mobile_align_env_on_top_of_the_spec(endpoint):
    """robosim/MobileAlign-v0: with the alignment specification loaded on the env's world, an
    agent that adds nothing (zero wheel speeds) reaches the success the task rewards."""
    import gymnasium as gym
    env = gym.make("robosim/MobileAlign-v0", endpoint=endpoint)
    try:
        base = env.unwrapped
        obs, _ = env.reset(seed=3)
        assert 0.1 <= abs(obs[0]) <= 0.3
        base.client.load_motion_spec(base.world_id,
                                     path=os.path.join(SPECS, "dual_arm_alignment.jsonld"))
        ret, terminated, truncated, steps = 0.0, False, False, 0
        while not (terminated or truncated):
            obs, r, terminated, truncated, info = env.step(np.zeros(2))
            ret += r
            steps += 1
        assert terminated and not truncated, (steps, obs)
        assert abs(obs[0]) < np.radians(1.0) and obs[6] > 0 and obs[7] > 0
        # without the specification the same zero action does not align
        obs, _ = env.reset(seed=3)
        base.client.clear_motion_spec(base.world_id)
        for _ in range(200):
            obs, r, terminated, truncated, info = env.step(np.zeros(2))
        assert not terminated and abs(obs[0]) > 0.05
    finally:
        env.close()


@pytest.mark.parametrize("scenario, spec", [(1, "dual_arm_alignment.jsonld"),
                                            (2, "dual_arm_alignment_passive.jsonld")])
def test_align_plot_command(endpoint, tmp_path, scenario, spec):
    """robosim align-plot runs the alignment (scenario 1: wheels; 2: a passive base) and writes
    the plot of angle, distances, forces."""
    import subprocess
    import sys
    out = tmp_path / "alignment.png"
    r = subprocess.run([sys.executable, "-m", "robosim.cli", "align-plot", "--endpoint", endpoint,
                        "--scenario", str(scenario), "--spec", os.path.join(SPECS, spec),
                        "--seconds", "15", "--out", str(out)],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                           [os.path.join(os.path.dirname(robosim.__file__), "..")]
                           + os.environ.get("PYTHONPATH", "").split(os.pathsep))))
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 10000
    assert "aligned from t = " in r.stdout and "(not aligned)" not in r.stdout, r.stdout
