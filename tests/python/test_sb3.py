"""Stable-Baselines3's PPO trains through robosim.sb3's VecEnv over robosim.vector (one request
per step for all sub-environments), with SB3's episode-end conventions and no warnings about
robosim."""
import warnings

import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecMonitor

import robosim
from robosim.sb3 import make_vec_env


def test_sb3_conventions_match_the_vector_env(endpoint):
    """Stepping the adapter and a SAME_STEP robosim.vector alike: the same
    observations and rewards; at an episode's end terminal_observation and TimeLimit.truncated
    as SB3 expects."""
    n = 3
    sb = make_vec_env("robosim/FingerTouch-v0", num_envs=n, endpoint=endpoint,
                      max_episode_steps=5)
    ref = robosim.vector.make("robosim/FingerTouch-v0", num_envs=n, endpoint=endpoint,
                              autoreset_mode="same_step", max_episode_steps=5)
    try:
        sb.seed(11)
        obs = sb.reset()
        robs, _ = ref.reset(seed=11)
        np.testing.assert_array_equal(obs, robs)
        acts = np.full((n, 1), 0.2)
        for k in range(5):
            obs, rew, dones, infos = sb.step(acts)
            robs, rrew, term, trunc, rinfo = ref.step(acts)
            np.testing.assert_array_equal(obs, robs)
            np.testing.assert_allclose(rew, rrew.astype(np.float32))
        assert dones.all() and all(i["TimeLimit.truncated"] for i in infos)
        for i in range(n):
            np.testing.assert_array_equal(infos[i]["terminal_observation"],
                                          rinfo["final_obs"][i])
    finally:
        sb.close()
        ref.close()


def test_ppo_learns_a_few_thousand_steps_without_warnings(endpoint):
    venv = VecMonitor(make_vec_env("robosim/ParallelArmReach-v1", num_envs=8,
                                   endpoint=endpoint, max_episode_steps=50))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = PPO("MlpPolicy", venv, n_steps=128, batch_size=256, n_epochs=2, seed=0,
                        device="cpu", verbose=0)
            model.learn(total_timesteps=4096)
        about_robosim = [str(w.message) for w in caught
                         if "robosim" in str(w.message).lower() or "robosim" in w.filename]
        assert not about_robosim, about_robosim
        assert model.num_timesteps >= 4096
        # episodes ended (time limit or success) and were reported by VecMonitor
        lengths = [e["l"] for e in model.ep_info_buffer]
        assert lengths and all(1 <= n <= 50 for n in lengths)
    finally:
        venv.close()


def test_float32_spaces_pass_sb3s_checker_without_a_warning(endpoint):
    """SB3's check_env recommends float32 for a float64 action space; by default each -v1 task
    and each goal variant passes it with every warning an error (dtype=np.float64 does warn:
    the check can fail), and robosim.sb3's VecEnv carries the float32 spaces."""
    import gymnasium as gym
    import pytest
    from stable_baselines3.common.env_checker import check_env
    for task in ("FingerPush-v1", "FingerTouch-v1", "SerialArmReach-v1", "ParallelArmReach-v1",
                 "DiffDriveGoal-v1", "FingerPushGoal-v1", "SerialArmReachGoal-v1",
                 "ParallelArmReachGoal-v1"):
        env = gym.make("robosim/" + task, endpoint=endpoint)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                # a goal env's checks call compute_reward, which Gymnasium's wrappers hide
                check_env(env.unwrapped if task in robosim.goal.GOAL_TASKS else env)
        finally:
            env.close()
    env = gym.make("robosim/FingerPush-v1", endpoint=endpoint, dtype=np.float64)
    try:
        with pytest.warns(UserWarning, match="float64"):
            check_env(env)
    finally:
        env.close()
    venv = make_vec_env("robosim/FingerPush-v1", num_envs=2, endpoint=endpoint)
    try:
        assert venv.observation_space.dtype == np.float32
        assert venv.action_space.dtype == np.float32
        assert venv.reset().dtype == np.float32
    finally:
        venv.close()


def test_her_with_sac_learns_briefly_on_a_goal_env(endpoint):
    """SB3's HerReplayBuffer (relabelling through the env's compute_reward) with SAC runs a few
    hundred steps on SerialArmReachGoal-v1 (MultiInputPolicy on its Dict observation): the
    buffer holds the steps taken and a sampled batch's relabelled rewards are compute_reward's
    of its goals."""
    import gymnasium as gym
    from stable_baselines3 import SAC, HerReplayBuffer
    env = gym.make("robosim/SerialArmReachGoal-v1", endpoint=endpoint, max_episode_steps=50)
    try:
        model = SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer,
                    replay_buffer_kwargs=dict(n_sampled_goal=4,
                                              goal_selection_strategy="future"),
                    learning_starts=100, batch_size=64, train_freq=4, gradient_steps=1,
                    policy_kwargs=dict(net_arch=[32, 32]), seed=0, device="cpu", verbose=0)
        model.learn(total_timesteps=300)
        assert model.num_timesteps == 300
        buf = model.replay_buffer
        assert buf.size() * buf.n_envs == 300
        batch = buf.sample(256)
        want = env.unwrapped.compute_reward(batch.next_observations["achieved_goal"].numpy(),
                                            batch.observations["desired_goal"].numpy(), {})
        np.testing.assert_array_equal(batch.rewards.numpy().ravel(), want.astype(np.float32))
        assert set(np.unique(batch.rewards.numpy())) <= {-1.0, 0.0}  # the sparse reward
    finally:
        env.close()
