"""robosim-eval: run a policy headless on a robosim environment and write per-episode returns,
lengths and summary statistics as JSON.

    robosim-eval --env robosim/FingerPush-v0 --policy robosim.baselines:auto \
                 --episodes 10 --seed 0 --out results.json [--endpoint tcp://host:port]
                 [--env-kwargs '{"normalize_actions": true}'] [--obs-norm stats.npz]

The policy is module:callable, either obs -> action or a factory marked with
robosim.baselines.policy_factory (called once with the environment). Episode i is reset with
seed S + i. The endpoint defaults to $ROBOSIM_ENDPOINT, else a local robosim-server is started.
--env-kwargs (a JSON object) goes to gym.make. --obs-norm applies the observation normalizer a
policy was trained with, as Stable-Baselines3's VecNormalize does: (obs - mean) / sqrt(var +
epsilon), clipped to +-clip_obs; the file is .npz or .json with mean and var (and optionally
epsilon, default 1e-8, and clip_obs, default 10), e.g. from a VecNormalize's obs_rms.
Exit status: 0 when every episode ran, 1 on any failure (the JSON then holds the error), 2 on
bad arguments."""
import argparse
import json
import math
import sys
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

    def __init__(self, mean, var, epsilon=1e-8, clip_obs=10.0):
        self.mean = np.asarray(mean, dtype=np.float64)
        self.var = np.asarray(var, dtype=np.float64)
        self.epsilon, self.clip_obs = float(epsilon), float(clip_obs)
        if self.mean.shape != self.var.shape:
            raise ValueError("observation normalizer: mean has shape %s, var %s"
                             % (self.mean.shape, self.var.shape))

    @classmethod
    def load(cls, path):
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


def evaluate(env, policy, episodes, seed, progress=None):
    """Run `episodes` episodes; a list of per-episode dicts."""
    out = []
    for i in range(episodes):
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


def main(argv=None):
    p = argparse.ArgumentParser(prog="robosim-eval", description=__doc__.split("\n\n")[0])
    from ._util import version_text
    p.add_argument("--version", action="version", version=version_text("robosim-eval"))
    p.add_argument("--env", required=True, help="environment id, e.g. robosim/FingerPush-v0")
    p.add_argument("--policy", required=True, help="module:callable")
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="results.json")
    p.add_argument("--endpoint", help="server (default: $ROBOSIM_ENDPOINT, else start a local "
                                      "robosim-server)")
    p.add_argument("--env-kwargs", default="{}", metavar="JSON",
                   help="keyword arguments for gym.make, a JSON object")
    p.add_argument("--obs-norm", metavar="FILE", help="observation statistics (.npz or .json: "
                   "mean, var[, epsilon, clip_obs]) to normalize observations with, as "
                   "VecNormalize does")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    if args.episodes < 1:
        p.error("--episodes must be at least 1")
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except ValueError as exc:
        p.error("--env-kwargs is not JSON: %s" % exc)
    if not isinstance(env_kwargs, dict):
        p.error("--env-kwargs must be a JSON object, got %s" % args.env_kwargs)

    import gymnasium as gym
    from tqdm import tqdm

    from ._util import load_object
    from .baselines import make_policy
    from .envs import register_envs
    register_envs()
    from .client import env_endpoint
    endpoint = args.endpoint or env_endpoint()
    result = {"env": args.env, "policy": args.policy, "episodes": args.episodes,
              "seed": args.seed, "endpoint": endpoint, "env_kwargs": env_kwargs,
              "obs_norm": args.obs_norm, "ok": False}
    env = None
    rc = 1
    try:
        policy_obj = load_object(args.policy)
        norm = ObsNormalizer.load(args.obs_norm) if args.obs_norm else None
        env = gym.make(args.env, **dict({"endpoint": endpoint, "timeout": args.timeout},
                                        **env_kwargs))
        if norm is not None:
            env = gym.wrappers.TransformObservation(env, norm, gym.spaces.Box(
                -norm.clip_obs, norm.clip_obs, env.observation_space.shape, dtype=np.float64))
        policy = make_policy(policy_obj, env)
        with tqdm(total=args.episodes, desc=args.env, unit="ep", file=sys.stderr,
                  disable=args.no_progress) as bar:
            eps = evaluate(env, policy, args.episodes, args.seed, bar)
        result["per_episode"] = eps
        result["summary"] = {
            "return": _stats([e["return"] for e in eps]),
            "length": _stats([e["length"] for e in eps]),
            "success_rate": sum(e["success"] for e in eps) / len(eps),
        }
        result["ok"] = True
        rc = 0
    except Exception as exc:  # noqa: BLE001 (any failure: reported in the JSON, exit 1)
        result["error"] = "%s: %s" % (type(exc).__name__, exc)
        print("robosim-eval: %s" % result["error"], file=sys.stderr)
    finally:
        if env is not None:
            env.close()
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2, allow_nan=True)
    if rc == 0:
        s = result["summary"]
        print("robosim-eval: %d episodes of %s: return %.3f +- %.3f, length %.1f, success %.0f%%;"
              " wrote %s" % (args.episodes, args.env, s["return"]["mean"], s["return"]["std"],
                             s["length"]["mean"], 100 * s["success_rate"], args.out))
    return rc


if __name__ == "__main__":
    sys.exit(main())
