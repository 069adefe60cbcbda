"""Randomized physics per episode through the protocol and the Gymnasium envs: the draws come
back in the reset's info, a seed reproduces the draws and the trajectory, GetSpec lists the
distributions, the vector env draws per sub-environment from its own seeds, and bad items are
refused with INVALID_ARGUMENT / NOT_FOUND / OUT_OF_RANGE naming them."""
import gymnasium as gym
import numpy as np
import pytest

import robosim

RANDOMIZE = {"finger.static_friction": "uniform(0.5, 1.5)",
             "finger.object_mass": "normal(1.0, 0.1)"}


def rollout(env, seed, steps=30):
    obs, info = env.reset(seed=seed)
    traj = [obs]
    for _ in range(steps):
        obs, *_ = env.step(np.full(env.action_space.shape, 0.8, dtype=np.float32))
        traj.append(obs)
    return info, np.array(traj)


def test_env_randomize_reproduces(endpoint):
    env = gym.make("robosim/FingerPush-v1", endpoint=endpoint, randomize=RANDOMIZE)
    try:
        spec = env.unwrapped.client.get_spec(env.unwrapped.world_id)
        assert spec["randomize"] == {"finger.static_friction": "uniform(0.5, 1.5)",
                                     "finger.object_mass": "normal(1.0, 0.1)"}
        i1, t1 = rollout(env, 5)
        i2, t2 = rollout(env, 6)
        i3, t3 = rollout(env, 5)
        assert set(i1["randomized"]) == set(RANDOMIZE)
        assert i1["randomized"] == i3["randomized"]
        np.testing.assert_array_equal(t1, t3)
        assert i1["randomized"] != i2["randomized"]
        assert 0.5 <= i2["randomized"]["finger.static_friction"] <= 1.5
        # the model the episode runs on holds the draws
        params = env.unwrapped.client.get_spec(env.unwrapped.world_id)["entities"]["finger"][
            "params"]
        assert params["static_friction"]["values"] == [i3["randomized"]["finger.static_friction"]]
        assert params["object_mass"]["values"] == [i3["randomized"]["finger.object_mass"]]
    finally:
        env.close()


def test_env_without_randomize_has_no_draws(endpoint):
    env = gym.make("robosim/FingerPush-v1", endpoint=endpoint)
    try:
        _, info = env.reset(seed=1)
        assert "randomized" not in info
    finally:
        env.close()


def test_draws_follow_distribution(client):
    """1,000 resets: the Kolmogorov-Smirnov statistic of the uniform draws below the critical
    value at p = 0.001."""
    wid = client.create_world(preset="finger", randomize={"finger.static_friction":
                                                          ("uniform", 0.5, 1.5)})
    draws = np.sort([client.reset(wid, seed=s)["randomized"]["finger.static_friction"]
                     for s in range(1000)])
    n = len(draws)
    cdf = (draws - 0.5) / 1.0
    d = max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))
    assert d < 1.949 / np.sqrt(n), d


def test_reset_replaces_and_clears(client):
    wid = client.create_world(task="FingerPush-v1", randomize=RANDOMIZE)
    s = client.reset(wid, seed=3, randomize=["finger.restitution ~ uniform(0.1, 0.2)"])
    assert list(s["randomized"]) == ["finger.restitution"]
    assert 0.1 <= s["randomized"]["finger.restitution"] <= 0.2
    s = client.reset(wid, seed=3, randomize={})
    assert s["randomized"] == {}
    assert client.get_spec(wid)["randomize"] == {}


@pytest.mark.parametrize("item,dist,code,needle", [
    ("hand.static_friction", "uniform(0, 1)", "NOT_FOUND", "hand.static_friction"),
    ("finger.stickiness", "uniform(0, 1)", "NOT_FOUND", "stickiness"),
    ("finger.restitution", "gamma(1, 2)", "INVALID_ARGUMENT", "gamma"),
    ("finger.restitution", "uniform(0.5, 1.5)", "OUT_OF_RANGE", "finger.restitution"),
    ("finger.restitution", "uniform(0.9, 0.1)", "INVALID_ARGUMENT", "finger.restitution"),
])
def test_bad_randomize_refused(client, item, dist, code, needle):
    with pytest.raises(robosim.RobosimError, match=needle) as e:
        client.create_world(task="FingerPush-v1", randomize={item: dist})
    assert e.value.code_name == code
    wid = client.create_world(task="FingerPush-v1", randomize=RANDOMIZE)
    with pytest.raises(robosim.RobosimError, match=needle) as e:
        client.reset(wid, seed=1, randomize={item: dist})
    assert e.value.code_name == code
    assert set(client.get_spec(wid)["randomize"]) == set(RANDOMIZE)  # unchanged


def test_malformed_distribution_text_refused_by_client(client):
    with pytest.raises(ValueError, match="uniform"):
        client.create_world(task="FingerPush-v1", randomize={"finger.restitution": "uniform 1"})


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_vector_env_randomize(endpoint, mode):
    venv = gym.make_vec("robosim/FingerPush-v1", num_envs=3, vectorization_mode="vector_entry_point",
                        endpoint=endpoint, randomize=RANDOMIZE, autoreset_mode=mode,
                        max_episode_steps=20)
    single = gym.make("robosim/FingerPush-v1", endpoint=endpoint, randomize=RANDOMIZE)
    try:
        _, infos = venv.reset(seed=[10, 11, 12])
        assert infos["_randomized"].all()
        for i, seed in enumerate([10, 11, 12]):
            _, info = single.reset(seed=seed)
            for item, v in info["randomized"].items():
                assert infos["randomized"][item][i] == v
        # episodes end (a short limit) and the autoreset's draws come with the new episodes
        seen = 0
        for _ in range(120):
            _, _, term, trunc, infos = venv.step(np.zeros((3, 1), dtype=np.float32))
            if "_randomized" in infos and infos["_randomized"].any():
                seen += 1
                mask = infos["_randomized"]
                fr = infos["randomized"]["finger.static_friction"][mask]
                assert np.all((fr >= 0.5) & (fr <= 1.5))
                seeds = infos["seed"][mask]
                for s, v in zip(seeds, fr):
                    _, info = single.reset(seed=int(s))
                    assert info["randomized"]["finger.static_friction"] == v
        assert seen > 0
    finally:
        venv.close()
        single.close()
