"""robosim on Ray (pip install "robosim-gym[ray]"): every node runs its own robosim-server next to
the work that uses it, and Ray places the work.

    import ray, robosim.ray as rr
    ray.init()                                  # or ray.init("ray://head:10001")
    with rr.ServerPool(workers=8) as pool:      # 8 actors, spread over the nodes, 1 server each
        eps = pool.evaluate("robosim/FingerPush-v0", "robosim.baselines:auto", episodes=1000)
        rows = pool.sweep("finger", [{"finger.finger_mass": [m]} for m in masses], steps=100)

- ServerActor: a Ray actor that starts a robosim-server (LocalServer, 127.0.0.1) on its node
  and stops it with the actor. The server runs with --exit-with-stdin, so it also ends when the
  actor's process dies however it dies (ray.kill, a lost node): nothing is left behind.
- ServerPool: N such actors (scheduling strategy SPREAD: across the nodes) with evaluation and
  parameter sweeps split over them by ray.util.ActorPool (the next chunk goes to the first actor
  that is free).
- node_endpoint(): from a task or actor on any node, the endpoint of that node's own server (a
  named, detached-free actor per node, pinned there by NodeAffinitySchedulingStrategy and
  started on first use), so an env on a Ray worker talks to a server on its own machine over
  loopback. make_env / make_vector_env are env creators for RLlib (see examples/rllib_ppo.py).

Results are deterministic: an episode's result depends only on the env, the policy and its
seed, never on which node or worker ran it (tests/python/test_ray.py checks a pool's results
against a local serial run, bit for bit)."""
from typing import Any, Optional, Sequence
import os
import tempfile

import ray
from ray.util import ActorPool
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .server import LocalServer

NAMESPACE = "robosim"
NODE_SERVER_PREFIX = "robosim-node-server-"


class ServerActor:
    """One robosim-server on this actor's node, alive as long as the actor.

    server_args: more robosim-server flags. max_worlds: the server's --max-worlds (None: its
    default). snapshot_key: 32 bytes shared by a pool's servers (written to a mode-600 file for
    --snapshot-key-file) so that a snapshot taken on one restores on every other; None: a random
    key per server."""

    def __init__(self, server_args: Sequence[str] = (), max_worlds: Optional[int] = None,
                 snapshot_key: Optional[bytes] = None) -> None:
        self._key_file = None
        args = list(server_args)
        if snapshot_key is not None:
            fd, self._key_file = tempfile.mkstemp(prefix="robosim-snapkey-")
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(bytes(snapshot_key))
            args += ["--snapshot-key-file", self._key_file]
        self.server = LocalServer(args=args, max_worlds=max_worlds)
        self._envs: dict = {}  # evaluation envs kept between chunks, by their arguments

    def endpoint(self) -> str:
        """The server's endpoint (tcp://127.0.0.1:port: reachable from this node only)."""
        return self.server.endpoint

    def info(self) -> dict:
        """{"endpoint", "node_id", "node_ip", "server_pid", "actor_pid"}."""
        ctx = ray.get_runtime_context()
        return {"endpoint": self.server.endpoint, "node_id": ctx.get_node_id(),
                "node_ip": ray.util.get_node_ip_address(),
                "server_pid": self.server.proc.pid if self.server.proc else None,
                "actor_pid": os.getpid()}

    def evaluate(self, env_id: str, policy: Any, seed: int, indices: Any,
                 env_kwargs: Optional[dict] = None, obs_norm: Optional[str] = None,
                 timeout: float = 30.0) -> list:
        """Episodes `indices` (episode i is reset with seed + i) of env_id under `policy`
        ("module:callable"), on this node's server; robosim.evaluate's per-episode dicts, each
        with "node_id" added."""
        from .episodes import evaluate_episodes, make_eval_env
        key = (env_id, policy, repr(sorted((env_kwargs or {}).items())), repr(obs_norm), timeout)
        if key not in self._envs:
            self._envs[key] = make_eval_env(env_id, policy, self.server.endpoint, env_kwargs,
                                            obs_norm, timeout)
        env, pol = self._envs[key]
        node = ray.get_runtime_context().get_node_id()
        return [dict(e, node_id=node) for e in evaluate_episodes(env, pol, seed, indices)]

    def snapshot(self, preset: str, params: Optional[dict] = None, seed: int = 0,
                 warmup_steps: int = 0, commands: Any = None) -> bytes:
        """A snapshot (bytes) of a new `preset` world (no task: its parameters may change) with
        `params`, after warmup_steps control steps under `commands` ({entity: values})."""
        from .client import Client
        with Client(self.server.endpoint) as c:
            wid = c.create_world(preset=preset, params=params or {}, seed=seed)
            try:
                if warmup_steps:
                    c.step(wid, steps=warmup_steps, commands=commands)
                return c.get_state(wid, snapshot=True)["snapshot"]
            finally:
                c.destroy_world(wid)

    def sweep(self, preset: str, snapshot: bytes, variants: Sequence[dict], steps: int,
              commands: Any = None, first_index: int = 0) -> list:
        """For each variant (a {"entity.param": values} dict): fork the world of `snapshot`
        (made from `preset`), set the variant's parameters, run `steps` control steps under
        `commands` and report {"index", "variant", "time", "entities" ({name: state list}),
        "events"} (index: first_index + its position); a variant the server refuses gets
        {"index", "variant", "error"} instead."""
        from .client import Client
        from .errors import RobosimError
        out = []
        with Client(self.server.endpoint) as c:
            base = c.create_world(preset=preset)
            try:
                c.set_state(base, snapshot)
                for k, v in enumerate(variants):
                    wid = c.fork_world(base)
                    try:
                        if v:
                            c.set_params(wid, v)
                        s = c.step(wid, steps=steps, commands=commands)
                        out.append({"index": first_index + k, "variant": v, "time": s["time"],
                                    "entities": {n: e["state"].tolist()
                                                 for n, e in s["entities"].items()},
                                    "events": [{"entity": e["entity"], "kind": e["kind"],
                                                "time": e["time"]} for e in s["events"]]})
                    except RobosimError as exc:
                        out.append({"index": first_index + k, "variant": v, "error": str(exc)})
                    finally:
                        c.destroy_world(wid)
            finally:
                c.destroy_world(base)
        return out

    def close(self) -> None:
        """Stop the server (also done when the actor goes)."""
        for env, _ in self._envs.values():
            env.close()
        self._envs.clear()
        self.server.close()
        if self._key_file:
            try:
                os.unlink(self._key_file)
            except OSError:
                pass
            self._key_file = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


RemoteServerActor = ray.remote(ServerActor)


class ServerPool:
    """`workers` ServerActors spread over the cluster's nodes (one robosim-server each).

    num_cpus: the CPUs each actor reserves (its server's stepping runs in it; fractions allowed
    on small machines). strategy: Ray's scheduling strategy ("SPREAD": one node after the other).
    A shared random snapshot key lets every server restore every other's snapshots (sweep)."""

    def __init__(self, workers: int = 2, num_cpus: float = 1, server_args: Sequence[str] = (),
                 max_worlds: Optional[int] = None, strategy: str = "SPREAD") -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1, got %r" % (workers,))
        key = os.urandom(32)
        self.actors = [RemoteServerActor.options(num_cpus=num_cpus,
                                                 scheduling_strategy=strategy).remote(
            server_args=server_args, max_worlds=max_worlds, snapshot_key=key)
            for _ in range(workers)]
        self.infos = ray.get([a.info.remote() for a in self.actors])

    def nodes(self) -> list:
        """The node ids the actors run on (one entry per actor)."""
        return [i["node_id"] for i in self.infos]

    def evaluate(self, env_id: str, policy: Any, episodes: int, seed: int = 0,
                 env_kwargs: Optional[dict] = None, obs_norm: Optional[str] = None,
                 timeout: float = 30.0, chunk: Optional[int] = None,
                 progress: Any = None) -> list:
        """Episodes 0..episodes-1 (seed + i) split in chunks over the actors; per-episode dicts
        in episode order. progress: called with each finished chunk's list (e.g. a tqdm
        update)."""
        chunk = chunk or max(1, min(16, episodes // (4 * len(self.actors)) or 1))
        chunks = [list(range(i, min(i + chunk, episodes))) for i in range(0, episodes, chunk)]
        out = []
        pool = ActorPool(self.actors)
        for eps in pool.map_unordered(
                lambda a, idx: a.evaluate.remote(env_id, policy, seed, idx, env_kwargs,
                                                 obs_norm, timeout), chunks):
            out.extend(eps)
            if progress is not None:
                progress(eps)
        return sorted(out, key=lambda e: e["episode"])

    def snapshot(self, preset: str, params: Optional[dict] = None, seed: int = 0,
                 warmup_steps: int = 0, commands: Any = None) -> bytes:
        """A snapshot from the first actor's server (it restores on every server of the pool:
        they share a snapshot key)."""
        return ray.get(self.actors[0].snapshot.remote(preset, params, seed, warmup_steps,
                                                      commands))

    def sweep(self, preset: str, variants: Sequence[dict], steps: int,
              snapshot: Optional[bytes] = None, params: Optional[dict] = None, seed: int = 0,
              warmup_steps: int = 0, commands: Any = None, chunk: Optional[int] = None,
              progress: Any = None) -> list:
        """Monte Carlo / parameter sweep: every variant ({"entity.param": values}, e.g. drawn
        at random) forked from one snapshot (given, or of a `preset` world with `params` after
        warmup_steps under `commands`), set to its parameters and run for `steps` control
        steps under `commands`, spread over the pool; results in the variants' order."""
        if snapshot is None:
            snapshot = self.snapshot(preset, params, seed, warmup_steps, commands)
        snap = ray.put(snapshot)
        variants = list(variants)
        chunk = chunk or max(1, min(32, len(variants) // (4 * len(self.actors)) or 1))
        chunks = [(i, variants[i:i + chunk]) for i in range(0, len(variants), chunk)]
        results = [None] * len(variants)
        for rows in ActorPool(self.actors).map_unordered(
                lambda a, c: a.sweep.remote(preset, snap, c[1], steps, commands, c[0]), chunks):
            for r in rows:
                results[r["index"]] = r
            if progress is not None:
                progress(rows)
        return results

    def close(self) -> None:
        """Stop every actor's server and the actors."""
        actors, self.actors = self.actors, []
        try:
            ray.get([a.close.remote() for a in actors], timeout=30)
        except Exception:  # noqa: BLE001 (a lost actor: its server ended with it)
            pass
        for a in actors:
            ray.kill(a)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_node_server = None  # this process's handle of its node's server actor


def node_server(num_cpus: float = 0, server_args: Sequence[str] = (),
                max_worlds: int = 4096) -> Any:
    """The handle of this node's robosim-server actor: started on first use, pinned to this
    node, named per node in namespace "robosim" and detached (it outlives the task or env runner
    that started it, so every worker of the node shares it); stop_node_servers() ends them,
    and so does the end of the cluster (the server dies with its actor)."""
    global _node_server
    node = ray.get_runtime_context().get_node_id()
    if _node_server is None or _node_server[0] != node:
        h = RemoteServerActor.options(
            name=NODE_SERVER_PREFIX + node, namespace=NAMESPACE, get_if_exists=True,
            lifetime="detached", num_cpus=num_cpus,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
        ).remote(server_args=server_args, max_worlds=max_worlds)
        _node_server = (node, h)
    return _node_server[1]


def stop_node_servers() -> int:
    """Stop every node's server actor (node_server); how many were stopped."""
    global _node_server
    _node_server = None
    n = 0
    for a in ray.util.list_named_actors(all_namespaces=True):
        if a["namespace"] == NAMESPACE and a["name"].startswith(NODE_SERVER_PREFIX):
            try:
                ray.kill(ray.get_actor(a["name"], namespace=NAMESPACE))
                n += 1
            except ValueError:  # gone meanwhile
                pass
    return n


def node_endpoint() -> str:
    """The endpoint of this node's own robosim-server (see node_server): call it from a task or
    actor on a Ray worker to give an env a server on its machine."""
    return ray.get(node_server().endpoint.remote())


def make_env(config: Optional[dict] = None) -> Any:
    """Env creator (RLlib's tune.register_env, or any Ray worker): a robosim env on this node's
    server. config: "env" (default "robosim/FingerPush-v0") and keyword arguments for gym.make;
    with "num_envs" (RLlib's vector_entry_point mode) a RobosimVectorEnv of that many worlds,
    stepped by one StepBatch per step."""
    import gymnasium as gym

    from .envs import register_envs
    register_envs()
    cfg = dict(config or {})
    env_id = cfg.pop("env", "robosim/FingerPush-v0")
    for k in ("worker_index", "num_workers", "vector_index", "remote"):
        cfg.pop(k, None)
    cfg["endpoint"] = node_endpoint()
    if "num_envs" in cfg:
        n = int(cfg.pop("num_envs"))
        return gym.make_vec(env_id, n, vectorization_mode="vector_entry_point", **cfg)
    return gym.make(env_id, **cfg)
