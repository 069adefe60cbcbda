"""Declared tasks: a task defined by a JSON document (no C), registered as a Gymnasium id with
robosim.register_task, passes Gymnasium's check_env, follows its declared reward on the world's
sensors, is refused with the bad item named when the document is wrong, and trains: PPO on a
few thousand steps improves its return."""
import copy
import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import robosim
from robosim.sb3 import make_vec_env

# Point joint 1 of the vertical two-link arm at a target angle drawn at each reset; the action
# is the two joints' PID setpoints as fractions of pi; reward: minus the angle error.
POINT = {
    "name": "PointJoint-v0",
    "preset": "serial_arm",
    "entity": "arm",
    "doc": "Point joint 1 at a drawn angle.",
    "params": [{"entity": "", "name": "control_dt", "values": [0.05]},
               {"entity": "arm", "name": "kP", "values": [4, 2]},
               {"entity": "arm", "name": "kI", "values": [4, 2]},
               {"entity": "arm", "name": "kD", "values": [0.2, 0.08]}],
    "quantities": {
        "q1": "arm.theta1",
        "q2": "arm.theta2",
        "target": {"dist": "uniform", "a": -1.5, "b": 1.5},
        "error": {"expr": "abs(wrap(q1 - target))"},
    },
    "observation": [
        {"expr": "target", "scale": 1.5, "low": -1, "high": 1},
        {"expr": "wrap(q1)", "scale": 3.14159, "low": -1.01, "high": 1.01},
        {"expr": "wrap(q2)", "scale": 3.14159, "low": -1.01, "high": 1.01},
    ],
    "action": [
        {"actuator": "joint1", "low": -1, "high": 1, "command": [-3.14159, 3.14159]},
        {"actuator": "joint2", "low": -1, "high": 1, "command": [-3.14159, 3.14159]},
    ],
    "reward": "-error",
    "success": "lt(error, 0.02)",
    "max_steps": 40,
    "reset": [{"item": "arm.theta0[0]", "dist": "uniform", "a": -0.5, "b": 0.5}],
    "info": ["error"],
}


@pytest.fixture(scope="module")
def endpoint():
    """A server of this module's own: the tasks registered here stay off the session's, whose
    task list other tests check."""
    with robosim.LocalServer() as s:
        yield s.endpoint


@pytest.fixture(scope="module")
def point_id():
    name = robosim.register_task("test/PointJoint-v0", POINT)
    assert name == "PointJoint-v0"
    return "test/PointJoint-v0"


def test_registered_document_passes_check_env(point_id, endpoint):
    env = gym.make(point_id, endpoint=endpoint)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        assert env.spec.max_episode_steps == 40
        assert env.observation_space.shape == (3,) and env.action_space.shape == (2,)
    finally:
        env.close()


def test_reward_follows_the_document(point_id, endpoint):
    """The reward is minus the wrapped angle error between the arm's own state and the target
    the observation reports; success in info when the error is below 0.02 rad."""
    env = gym.make(point_id, endpoint=endpoint, dtype=np.float64)
    try:
        obs, info = env.reset(seed=3)
        target = obs[0] * 1.5
        assert -1.5 <= target <= 1.5
        for _ in range(40):
            obs, reward, term, trunc, info = env.step(np.array([target / math.pi, 0.0]))
            q1 = env.unwrapped.state["entities"]["arm"]["state"][0]  # theta1
            err = abs(math.atan2(math.sin(q1 - target), math.cos(q1 - target)))
            assert reward == pytest.approx(-err, abs=1e-12)
            assert info["error"] == pytest.approx(err, abs=1e-12)
            assert info["is_success"] == (err < 0.02)
            if term or trunc:
                break
        assert term, "the PID setpoint at the target reaches it within 40 steps (%g)" % err
    finally:
        env.close()


def test_bad_document_names_the_item(endpoint):
    bad = copy.deepcopy(POINT)
    bad["name"] = "PointJointBad-v0"
    bad["quantities"]["error"] = {"expr": "abs(wrap(q1 - tagret))"}
    with robosim.Client(endpoint) as c:
        with pytest.raises(robosim.RobosimError) as e:
            c.register_task(bad)
        assert e.value.code_name == "INVALID_ARGUMENT" and "quantities.error" in str(e.value)
        bad = copy.deepcopy(POINT)
        bad["name"] = "PointJointBad-v0"
        bad["action"][0]["actuator"] = "elbow"
        with pytest.raises(robosim.RobosimError) as e:
            c.create_world(task_document=bad)
        assert "action[0].actuator" in str(e.value)
        # registered once, the task is created by name like a built-in one, and listed
        assert c.register_task(POINT) == "PointJoint-v0"
        wid = c.create_world(task="PointJoint-v0")
        assert c.get_spec(wid)["task"]["name"] == "PointJoint-v0"
        c.destroy_world(wid)
        assert "PointJoint-v0" in robosim.Client(endpoint).server["tasks"]


def _mean_return(model, venv, episodes):
    returns, done_returns = np.zeros(venv.num_envs), []
    obs = venv.reset()
    while len(done_returns) < episodes:
        action, _ = model.predict(obs, deterministic=True)
        obs, reward, dones, _ = venv.step(action)
        returns += reward
        for i in np.flatnonzero(dones):
            done_returns.append(returns[i])
            returns[i] = 0.0
    return float(np.mean(done_returns))


def test_ppo_trains_the_declared_task(point_id, endpoint):
    from stable_baselines3 import PPO
    venv = make_vec_env(point_id, num_envs=8, endpoint=endpoint)
    try:
        venv.seed(0)
        model = PPO("MlpPolicy", venv, n_steps=64, batch_size=128, n_epochs=5,
                    learning_rate=1e-3, seed=0, device="cpu", verbose=0)
        before = _mean_return(model, venv, 32)
        model.learn(total_timesteps=6144)
        venv.seed(0)
        after = _mean_return(model, venv, 32)
        # an untrained policy leaves joint 1 about 0.75 rad off on average (~ -15 a
        # 20-step episode); PPO learns to set the setpoint towards the target
        assert after > before + 3.0, (before, after)
    finally:
        venv.close()


def test_vector_env_of_the_declared_task(point_id, endpoint):
    """gym.make_vec's vector entry point runs the declared task batched, seeded like single
    envs: the same first observations."""
    venv = gym.make_vec(point_id, 3, vectorization_mode="vector_entry_point", endpoint=endpoint)
    single = gym.make(point_id, endpoint=endpoint)
    try:
        obs, _ = venv.reset(seed=21)
        assert obs.shape == (3, 3)
        for i in range(3):
            o, _ = single.reset(seed=21 + i)
            np.testing.assert_array_equal(obs[i], o)
        obs, reward, term, trunc, info = venv.step(np.zeros((3, 2), dtype=np.float32))
        assert reward.shape == (3,) and np.all(reward <= 0)
    finally:
        venv.close()
        single.close()


def test_task_file_at_start_and_a_kept_world_across_a_restart(tmp_path):
    """robosim-server --task-file registers a document before serving: Hello lists it, a world
    is created by its name, and with --state-dir the world comes back after a restart (its
    task registered again from the same file) at the state it was stopped in."""
    path = tmp_path / "point.json"
    path.write_text(__import__("json").dumps(POINT))
    args = ["--task-file", str(path), "--state-dir", str(tmp_path / "state")]
    with robosim.LocalServer(args=args) as s, robosim.Client(s.endpoint) as c:
        assert "PointJoint-v0" in c.server["tasks"]
        wid = c.create_world(task="PointJoint-v0", seed=4)
        token = c.token(wid)
        for _ in range(3):
            before = c.step(wid, action=[0.2, -0.1])
    with robosim.LocalServer(args=args) as s, robosim.Client(s.endpoint) as c:
        c.set_token(wid, token)
        after = c.get_state(wid)
        assert c.get_spec(wid)["task"]["name"] == "PointJoint-v0"
        np.testing.assert_array_equal(after["task"]["observation"],
                                      before["task"]["observation"])
        assert after["time"] == before["time"]
        c.step(wid, action=[0.2, -0.1])
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "Bad-v0", "preset": "serial_arm"}')
    with pytest.raises(Exception) as e:
        robosim.LocalServer(args=["--task-file", str(bad)], startup_timeout=5)
    assert "'entity' is required" in str(e.value)
