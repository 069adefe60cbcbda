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
bad arguments.

--ray [ADDRESS] --workers N splits the episodes over N workers of a Ray cluster (robosim.ray:
each worker a Ray actor with its own robosim-server on its node); the JSON is the same as a
local run's (plus "ray" and each episode's "node_id"), with the same per-episode results."""
from typing import Optional, Sequence
import argparse
import json
import sys

from .episodes import (ObsNormalizer, _stats, evaluate, evaluate_episodes,  # noqa: F401
                       make_eval_env)


def _evaluate_on_ray(args, env_kwargs, bar):
    """The episodes split over a robosim.ray.ServerPool of args.workers actors on the cluster
    at args.ray ("auto", an address, or "" for a new local one)."""
    import ray

    from .ray import ServerPool
    if not ray.is_initialized():
        ray.init(address=args.ray or None, include_dashboard=False, log_to_driver=False)
    with ServerPool(workers=args.workers, num_cpus=args.worker_cpus) as pool:
        def progress(eps):
            bar.update(len(eps))
            bar.set_postfix(ret="%.2f" % eps[-1]["return"])
        return pool.evaluate(args.env, args.policy, args.episodes, args.seed, env_kwargs,
                             args.obs_norm, args.timeout, progress=progress), pool.nodes()


def main(argv: Optional[Sequence[str]] = None) -> int:
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
    p.add_argument("--ray", nargs="?", const="auto", metavar="ADDRESS",
                   help="split the episodes over a Ray cluster (pip install robosim-gym[ray]): its "
                        "address (default: auto, the cluster this machine belongs to; 'local' "
                        "starts one here); each worker runs its own robosim-server")
    p.add_argument("--workers", type=int, default=2, help="with --ray: how many workers")
    p.add_argument("--worker-cpus", type=float, default=1.0,
                   help="with --ray: CPUs each worker reserves (default 1)")
    args = p.parse_args(argv)
    if args.workers < 1:
        p.error("--workers must be at least 1")
    if args.ray and args.endpoint:
        p.error("--ray starts a server per worker; it takes no --endpoint")
    if args.ray == "local":
        args.ray = ""
    if args.episodes < 1:
        p.error("--episodes must be at least 1")
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except ValueError as exc:
        p.error("--env-kwargs is not JSON: %s" % exc)
    if not isinstance(env_kwargs, dict):
        p.error("--env-kwargs must be a JSON object, got %s" % args.env_kwargs)

    try:
        from tqdm import tqdm
    except ImportError:  # the plot extra's: without it, no progress bar
        from ._util import NoProgress as tqdm

    from .client import env_endpoint
    endpoint = None if args.ray is not None else (args.endpoint or env_endpoint())
    result = {"env": args.env, "policy": args.policy, "episodes": args.episodes,
              "seed": args.seed, "endpoint": endpoint, "env_kwargs": env_kwargs,
              "obs_norm": args.obs_norm, "ok": False}
    if args.ray is not None:
        result["ray"] = {"address": args.ray or "local", "workers": args.workers}
    env = None
    rc = 1
    try:
        with tqdm(total=args.episodes, desc=args.env, unit="ep", file=sys.stderr,
                  disable=args.no_progress) as bar:
            if args.ray is not None:
                eps, nodes = _evaluate_on_ray(args, env_kwargs, bar)
                result["ray"]["nodes"] = len(set(nodes))
            else:
                env, policy = make_eval_env(args.env, args.policy, endpoint, env_kwargs,
                                            args.obs_norm, args.timeout)
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
