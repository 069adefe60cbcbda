"""The goal-conditioned variants (robosim.goal): Gymnasium's check_env, goals read from the -v1
observation by name and unit, and compute_reward on batches equal to the rewards step()
returned."""
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import robosim
from robosim.baselines import auto
from robosim.goal import GOAL_TASKS

GOAL_IDS = ["robosim/" + g for g in GOAL_TASKS]


@pytest.mark.parametrize("env_id", GOAL_IDS)
def test_check_env(env_id, endpoint):
    env = gym.make(env_id, endpoint=endpoint)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the recommendations on Box bounds
            check_env(env.unwrapped)
        space = env.observation_space
        assert isinstance(space, gym.spaces.Dict)
        assert set(space.spaces) == {"observation", "achieved_goal", "desired_goal"}
        assert all(s.dtype == np.float32 for s in space.spaces.values())
        base = GOAL_TASKS[env_id.split("/")[1]][0]
        assert env.spec.max_episode_steps == robosim.envs.TASK_LIMITS[base]
    finally:
        env.close()


def _episode(env, policy, seed, steps):
    """Goals, rewards and infos of up to `steps` steps of `policy` from reset(seed)."""
    obs, info = env.reset(seed=seed)
    ach, des, rew, infos = [], [], [], []
    for _ in range(steps):
        obs, r, term, trunc, info = env.step(policy(obs))
        ach.append(obs["achieved_goal"])
        des.append(obs["desired_goal"])
        rew.append(r)
        infos.append(info)
        if term or trunc:
            break
    return np.array(ach), np.array(des), np.array(rew), infos


@pytest.mark.parametrize("reward_type", ["sparse", "dense"])
@pytest.mark.parametrize("env_id", GOAL_IDS)
def test_compute_reward_on_batches_equals_the_step_rewards(env_id, reward_type, endpoint):
    """A baseline episode (which reaches its goal) and a random one: compute_reward over the
    whole batch of their goals equals the rewards step() gave, element by element; the sparse
    reward is 0 exactly where the goals are within the task's tolerance (both values occur),
    the dense one minus the distance in m; relabelled (swapped) goals get rewards of their own."""
    env = gym.make(env_id, endpoint=endpoint, reward_type=reward_type)
    u = env.unwrapped
    try:
        baseline = auto(u.env)
        a1, d1, r1, i1 = _episode(env, lambda o: baseline(o["observation"]), 3, 200)
        env.action_space.seed(0)
        a2, d2, r2, i2 = _episode(env, lambda o: env.action_space.sample(), 4, 20)
        ach, des, rew = np.concatenate([a1, a2]), np.concatenate([d1, d2]), np.concatenate([r1, r2])
        batch = u.compute_reward(ach, des, np.array(i1 + i2))
        assert batch.shape == rew.shape
        np.testing.assert_array_equal(batch, rew)
        dist = np.linalg.norm(ach.astype(np.float64) - des, axis=-1)
        if reward_type == "sparse":
            np.testing.assert_array_equal(rew, np.where(dist < u.tolerance, 0.0, -1.0))
            assert (rew == 0).any() and (rew == -1).any()
        else:
            np.testing.assert_allclose(rew, -dist, rtol=0, atol=0)
        # relabelling with the achieved goals themselves: every step reaches "its" goal
        assert u.compute_reward(ach, ach, None).tolist() == ([0.0] * len(ach) if reward_type
                                                             == "sparse" else [-0.0] * len(ach))
        # a single pair gives a scalar
        assert np.ndim(u.compute_reward(ach[0], des[0], {})) == 0
    finally:
        env.close()


@pytest.mark.parametrize("goal_task", sorted(GOAL_TASKS))
def test_goals_are_the_named_observation_values_in_metres(goal_task, endpoint):
    """The goal variant steps as its -v1 task (the same observation); the goals are the -v1
    values named by GetSpec, times their unit's size (ParallelArmReach-v1's 0.1 m)."""
    base, achieved, desired, tol = GOAL_TASKS[goal_task]
    g = gym.make("robosim/" + goal_task, endpoint=endpoint, dtype=np.float64)
    v1 = gym.make("robosim/" + base, endpoint=endpoint, dtype=np.float64)
    try:
        names = [v["name"] for v in v1.unwrapped.task_spec["observation"]]
        units = {v["name"]: v["unit"] for v in v1.unwrapped.task_spec["observation"]}
        scale = {"m": 1.0, "0.1 m": 0.1}
        og, _ = g.reset(seed=6)
        ov, _ = v1.reset(seed=6)
        rng = np.random.default_rng(2)
        for _ in range(5):
            np.testing.assert_array_equal(og["observation"], ov)
            for key, which in (("achieved_goal", achieved), ("desired_goal", desired)):
                want = [ov[names.index(n)] * scale[units[n]] for n in which]
                np.testing.assert_array_equal(og[key], want)
            a = rng.uniform(-1, 1, size=v1.action_space.shape)
            og, *_ = g.step(a)
            ov, *_ = v1.step(a)
        assert "< %g m" % tol in v1.unwrapped.task_spec["reward"], "the task's own tolerance"
    finally:
        g.close()
        v1.close()
    with pytest.raises(ValueError, match="reward_type"):
        robosim.goal.RobosimGoalEnv(goal_task, reward_type="shaped", endpoint=endpoint)


def test_goal_env_pickles(endpoint):
    import cloudpickle
    env = gym.make("robosim/SerialArmReachGoal-v1", endpoint=endpoint, reward_type="dense")
    try:
        copy = cloudpickle.loads(cloudpickle.dumps(env))
        try:
            assert copy.unwrapped.reward_type == "dense"
            a, _ = env.reset(seed=1)
            b, _ = copy.reset(seed=1)
            for k in a:
                np.testing.assert_array_equal(a[k], b[k])
        finally:
            copy.close()
    finally:
        env.close()
