"""Evaluation episodes, shared by robosim-eval (robosim.evaluate) and its Ray workers
(robosim.ray): the environment with its policy, and the per-episode results. Its own module so
that neither of those imports the other."""
from typing import Any, Callable, Optional
import json
import time

import numpy as np


def _stats(values):
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return {"mean": None, "std": None, "min": None, "max": None, "median": None}
    return {"mean": float(a.mean()), "std": float(a.std()), "min": float(a.min()),
            "max": float(a.max()), "median": float(np.median(a))}


class ObsNormalizer:
    """VecNormalize's observation transform with frozen statistics: clip((obs - mean) /
    sqrt(var + epsilon), -clip_obs, clip_obs)."""

    def __init__(self, mean: Any, var: Any, epsilon: float = 1e-8, clip_obs: float = 10.0) -> None:
        self.mean = np.asarray(mean, dtype=np.float64)
        self.var = np.asarray(var, dtype=np.float64)
        self.epsilon, self.clip_obs = float(epsilon), float(clip_obs)
        if self.mean.shape != self.var.shape:
            raise ValueError("observation normalizer: mean has shape %s, var %s"
                             % (self.mean.shape, self.var.shape))

    @classmethod
    def load(cls, path: str) -> "ObsNormalizer":
        """From .npz (arrays mean, var[, epsilon, clip_obs]) or .json (the same keys)."""
        if path.endswith(".json"):
            with open(path) as f:
                d = json.load(f)
        else:
            with np.load(path) as z:
                d = {k: z[k] for k in z.files}
        missing = {"mean", "var"} - set(d)
        if missing:
            raise ValueError("observation normalizer %s lacks %s" % (path, ", ".join(sorted(
                missing))))
        return cls(d["mean"], d["var"], float(d.get("epsilon", 1e-8)),
                   float(d.get("clip_obs", 10.0)))

    def __call__(self, obs):
        z = (np.asarray(obs, dtype=np.float64) - self.mean) / np.sqrt(self.var + self.epsilon)
        return np.clip(z, -self.clip_obs, self.clip_obs)


def evaluate_episodes(env: Any, policy: Callable[[Any], Any], seed: int, indices: Any,
                      progress: Any = None) -> list:
    """Run episodes `indices` (episode i is reset with seed + i); a list of per-episode dicts.
    An episode's result depends on its seed alone, so any split of the indices (robosim.ray)
    gives the same dicts, but for wall_seconds."""
    out = []
    for i in indices:
        obs, _ = env.reset(seed=seed + i)
        ret, length, success, t0 = 0.0, 0, False, time.monotonic()
        while True:
            obs, r, term, trunc, info = env.step(policy(obs))
            ret += float(r)
            length += 1
            success = success or bool(info.get("is_success", False))
            if term or trunc:
                break
        out.append({"episode": i, "seed": seed + i, "return": ret, "length": length,
                    "terminated": bool(term), "truncated": bool(trunc), "success": success,
                    "wall_seconds": time.monotonic() - t0})
        if progress is not None:
            progress.update(1)
            progress.set_postfix(ret="%.2f" % ret)
    return out


def evaluate(env: Any, policy: Callable[[Any], Any], episodes: int, seed: int,
             progress: Any = None) -> list:
    """Run `episodes` episodes; a list of per-episode dicts."""
    return evaluate_episodes(env, policy, seed, range(episodes), progress)


def make_eval_env(env_id: str, policy: Any, endpoint: Optional[str],
                  env_kwargs: Optional[dict] = None, obs_norm: Optional[str] = None,
                  timeout: float = 30.0) -> tuple:
    """(env, policy) as robosim-eval runs them: gym.make(env_id) on `endpoint` (None: a local
    server) with env_kwargs, observations normalized by the obs_norm file if given, and the
    policy ("module:callable" or a callable) made for the env."""
    import gymnasium as gym

    from ._util import load_object
    from .baselines import make_policy
    from .envs import register_envs
    register_envs()
    policy_obj = load_object(policy) if isinstance(policy, str) else policy
    norm = ObsNormalizer.load(obs_norm) if obs_norm else None
    env = gym.make(env_id, **dict({"endpoint": endpoint, "timeout": timeout},
                                  **(env_kwargs or {})))
    try:
        if norm is not None:
            env = gym.wrappers.TransformObservation(env, norm, gym.spaces.Box(
                -norm.clip_obs, norm.clip_obs, env.observation_space.shape, dtype=np.float64))
        return env, make_policy(policy_obj, env)
    except BaseException:
        env.close()
        raise
