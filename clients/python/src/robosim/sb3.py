"""Stable-Baselines3's VecEnv over robosim.vector (needs stable-baselines3, the [rl] extra):

    from stable_baselines3 import PPO
    from robosim.sb3 import make_vec_env

    venv = make_vec_env("robosim/SerialArmReach-v0", num_envs=16, normalize_actions=True)
    PPO("MlpPolicy", venv).learn(100_000)

All sub-environments step in one request (robosim.vector); SB3's conventions are kept: the
observation after an episode's end is the next episode's first, the last one is in
infos[i]["terminal_observation"], and infos[i]["TimeLimit.truncated"] says the episode was cut
by its time limit rather than ended by the task. The spaces are float32 (robosim.vector's
default, what SB3 expects); dtype=np.float64 passes through to robosim.vector."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from gymnasium.vector.vector_env import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from . import vector


class RobosimVecEnv(VecEnv):
    """SB3 VecEnv of a RobosimVectorEnv (made here in SAME_STEP autoreset mode, SB3's)."""

    def __init__(self, venv: vector.RobosimVectorEnv) -> None:
        if venv.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ValueError("RobosimVecEnv needs a RobosimVectorEnv in SAME_STEP autoreset "
                             "mode (SB3's convention), got %s" % venv.autoreset_mode)
        self.venv = venv
        self._actions: Optional[np.ndarray] = None
        super().__init__(venv.num_envs, venv.single_observation_space,
                         venv.single_action_space)

    def reset(self) -> np.ndarray:
        seeds = list(self._seeds)  # VecEnv.seed(s) gives s + i; None: the env's own generator
        obs, _ = self.venv.reset(seed=None if all(s is None for s in seeds) else seeds)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        dones = terminated | truncated
        keys = [k for k in infos if not k.startswith("_") and k not in ("final_obs",
                                                                           "final_info")]
        out = []
        for i in range(self.num_envs):
            info = {k: infos[k][i] for k in keys}
            if dones[i]:
                info.update(infos["final_info"][i])
                info["terminal_observation"] = infos["final_obs"][i]
                info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            out.append(info)
        return obs, rewards.astype(np.float32), dones, out

    def close(self) -> None:
        self.venv.close()

    def get_images(self) -> list:
        return list(self.venv.render() or ())

    def get_attr(self, attr_name: str, indices: Any = None) -> list:
        return [getattr(self.venv, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None,
                   **method_kwargs: Any) -> list:
        fn = getattr(self.venv, method_name)
        return [fn(*method_args, **method_kwargs) for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]


def make_vec_env(id: str, num_envs: int = 1, seed: Optional[int] = None,
                 n_envs: Optional[int] = None, **kwargs: Any) -> RobosimVecEnv:
    """robosim.vector.make(id, num_envs, autoreset_mode=SAME_STEP, **kwargs) as an SB3 VecEnv.

    seed: as in SB3's own make_vec_env, sub-environment i is reset with seed + i at the first
    reset (None: each from its own generator). n_envs: SB3's name for num_envs."""
    if n_envs is not None:
        num_envs = n_envs
    venv = RobosimVecEnv(vector.make(id, num_envs=num_envs,
                                     autoreset_mode=AutoresetMode.SAME_STEP, **kwargs))
    if seed is not None:
        venv.seed(int(seed))
    return venv
