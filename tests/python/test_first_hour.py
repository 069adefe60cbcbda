"""What an RL user meets in the first hour: SB3's make_vec_env arguments, the baselines on the
goal-conditioned envs, a MobileAlign task Gymnasium's checker accepts, a client timeout a loaded
machine does not hit, and the auto-started server's log kept where the error names it."""
import os
import signal
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import robosim
from robosim import baselines


def test_sb3_make_vec_env_takes_seed_as_sb3_does(endpoint):
    """make_vec_env(..., seed=s) resets sub-environment i with s + i (SB3's make_vec_env):
    the same first observations as a vector env reset with those seeds."""
    from robosim.sb3 import make_vec_env
    sb = make_vec_env("robosim/FingerPush-v1", n_envs=3, seed=7, endpoint=endpoint)
    ref = robosim.vector.make("robosim/FingerPush-v1", num_envs=3, endpoint=endpoint)
    try:
        assert sb.num_envs == 3
        obs = sb.reset()
        robs, _ = ref.reset(seed=[7, 8, 9])
        np.testing.assert_array_equal(obs, robs)
        again = make_vec_env("robosim/FingerPush-v1", num_envs=3, seed=7, endpoint=endpoint)
        try:
            np.testing.assert_array_equal(again.reset(), obs)
        finally:
            again.close()
    finally:
        sb.close()
        ref.close()


@pytest.mark.parametrize("goal_task", sorted(robosim.GOAL_TASKS))
def test_baselines_auto_runs_a_goal_env(endpoint, goal_task):
    """baselines.auto on a goal-conditioned env is its -v1 task's baseline on the dict
    observation's "observation": actions inside the action space."""
    env = gym.make("robosim/" + goal_task, endpoint=endpoint)
    try:
        assert env.unwrapped.task_spec["observation"]
        policy = baselines.auto(env)
        obs, _ = env.reset(seed=3)
        for _ in range(5):
            action = policy(obs)
            assert env.action_space.contains(np.asarray(action, dtype=env.action_space.dtype))
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        env.close()


def test_mobile_align_v1_passes_gymnasiums_checker(endpoint):
    """MobileAlign-v1: finite observation bounds, the action in [-1, 1]; check_env warns of
    nothing (MobileAlign-v0 had infinite bounds and a [-2, 2] action)."""
    env = gym.make("robosim/MobileAlign-v1", endpoint=endpoint)
    try:
        space = env.observation_space
        assert np.isfinite(space.low).all() and np.isfinite(space.high).all()
        assert (env.action_space.low == -1).all() and (env.action_space.high == 1).all()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped, skip_render_check=True)
        obs, _ = env.reset(seed=0)
        for _ in range(3):
            obs, *_ = env.step(env.action_space.sample())
            assert space.contains(obs)
    finally:
        env.close()


def test_mobile_align_v1_baseline(endpoint):
    """The v0 baseline (the alignment specification) through v1's normalized action."""
    env = gym.make("robosim/MobileAlign-v1", endpoint=endpoint)
    try:
        policy = baselines.auto(env)
        obs, _ = env.reset(seed=0)
        np.testing.assert_array_equal(policy(obs), np.zeros(2))
    finally:
        env.close()


def test_default_timeout_is_long_and_configurable(monkeypatch):
    """60 s unless told: $ROBOSIM_TIMEOUT sets it for every client an env makes."""
    from robosim.client import DEFAULT_TIMEOUT, default_timeout
    monkeypatch.delenv("ROBOSIM_TIMEOUT", raising=False)
    assert DEFAULT_TIMEOUT >= 60 and default_timeout() == DEFAULT_TIMEOUT
    monkeypatch.setenv("ROBOSIM_TIMEOUT", "123")
    assert default_timeout() == 123.0
    env = gym.make("robosim/FingerPush-v1")
    try:
        assert env.unwrapped.client.timeout == 123.0
    finally:
        env.close()
    monkeypatch.setenv("ROBOSIM_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="ROBOSIM_TIMEOUT"):
        default_timeout()


def test_timeout_names_the_kept_server_log(tmp_path, monkeypatch):
    """A request that times out against an auto-started server names the server's log file,
    which is still there after the env is closed."""
    monkeypatch.setenv("ROBOSIM_LOG_DIR", str(tmp_path))
    env = gym.make("robosim/FingerPush-v1", timeout=0.5)
    server = env.unwrapped._server
    assert server is not None and os.path.dirname(server.log_path) == str(tmp_path)
    env.reset(seed=0)
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        with pytest.raises(robosim.TimeoutError) as err:
            env.step(env.action_space.sample())
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
    log = server.log_path
    assert log in str(err.value) and err.value.server_log == log
    env.close()
    assert os.path.exists(log)


def test_an_empty_log_is_removed_at_close(tmp_path, monkeypatch):
    """A server that logged nothing and no error named leaves no file behind."""
    monkeypatch.setenv("ROBOSIM_LOG_DIR", str(tmp_path))
    with robosim.LocalServer() as s:
        assert os.path.exists(s.log_path)
    assert os.listdir(tmp_path) == []


def test_empty_logs_of_dead_processes_are_swept(tmp_path, monkeypatch):
    """An empty log whose process is gone (killed before it could remove it) is removed when
    the next server starts; a log with something in it stays."""
    import subprocess
    import sys
    monkeypatch.setenv("ROBOSIM_LOG_DIR", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    empty = tmp_path / ("robosim-server-%s-abc.log" % dead)
    full = tmp_path / ("robosim-server-%s-def.log" % dead)
    empty.write_text("")
    full.write_text("robosim-server: something to keep\n")
    with robosim.LocalServer():
        assert not empty.exists() and full.exists()

