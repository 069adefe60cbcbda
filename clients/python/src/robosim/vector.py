"""robosim.vector.make(id, num_envs=N): a Gymnasium VectorEnv of N worlds of one task on one
server, stepped by one columnar StepBatch request per step (StepBatch.arrays: the server steps
the worlds on its worker threads; each result is exactly what stepping that world alone gives).

Autoreset mode, chosen at make time (autoreset_mode=, declared in metadata["autoreset_mode"]):
- NEXT_STEP (Gymnasium's default): the step after the one that ended a sub-environment's
  episode resets it (its action is ignored; reward 0, not terminated or truncated) and returns
  the new episode's first observation. The reset rides in the same request as the others' step.
- SAME_STEP: the step that ends an episode returns the first observation of the next one; the
  final observation and info are in infos["final_obs"] / infos["final_info"] (masks
  infos["_final_obs"] / infos["_final_info"]).
- DISABLED: no automatic reset; reset(options={"reset_mask": mask}) resets the chosen ones.

Infos are arrays, one row per sub-environment, with Gymnasium's "_key" masks: the task's info
figures, is_success, events (how many events the step had), time; reset infos add seed.

Seeding follows Gymnasium: reset(seed=s) seeds sub-environment i with s + i, and later resets
draw their seeds from each sub-environment's own generator, the same way a single robosim
environment does, so the vector environment and N separate environments given the same seeds
and actions see the same observations.

Async mode, as EnvPool runs it (batch_size=B < num_envs, B dividing num_envs): the worlds are
split into num_envs / B fixed groups of B consecutive sub-environments, one pipelined
StepBatch.arrays request each, so the server steps some groups while the agent thinks about
others:

    venv = robosim.vector.make("FingerPush-v1", num_envs=4096, batch_size=1024)
    venv.async_reset(seed=0)                  # every group's reset sent, none awaited
    while training:
        obs, rew, term, trunc, info = venv.recv()     # the next group the server finished
        venv.send(policy(obs), info["env_id"])        # that group's actions, not awaited

recv returns B rows: info["env_id"] names the sub-environments (a group's, in order), and the
arrays are the group's own buffers, filled straight from the reply's bytes and overwritten
by that group's next recv (copy what you keep). Autoreset is NEXT_STEP (EnvPool's): the
send after a sub-environment's episode ended resets it. step() and reset() still work once
nothing is in flight. With batch_size=num_envs, send and recv pipeline one request.

An auto-started server (no endpoint and no $ROBOSIM_ENDPOINT) is sized for num_envs worlds."""
from typing import Any, Optional, Sequence, Union

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector.utils import batch_space
from gymnasium.vector.vector_env import AutoresetMode

from .client import Client, env_endpoint
from .envs import ActionMap, box, episode_params, next_seed, space_dtype
from .errors import RobosimError
from .render import draw_world, task_targets
from .server import LocalServer

NEEDS = ("step_batch.arrays.reset", "step_batch.arrays.info")


def autoreset_mode_of(mode: Any) -> AutoresetMode:
    """An AutoresetMode from itself, its value ("NextStep") or its name ("next_step")."""
    if isinstance(mode, AutoresetMode):
        return mode
    for m in AutoresetMode:
        if str(mode).replace("_", "").lower() in (m.value.lower(), m.name.replace("_", "").lower()):
            return m
    raise ValueError("autoreset_mode %r: use one of %s" % (
        mode, ", ".join(m.name.lower() for m in AutoresetMode)))


class RobosimVectorEnv(gym.vector.VectorEnv):
    """num_envs worlds of `task`. endpoint: a running server (None: $ROBOSIM_ENDPOINT, else a
    local one sized for num_envs worlds). autoreset_mode: an AutoresetMode or its name
    ("next_step", "same_step", "disabled"). max_episode_steps: the episode limit (None: the
    task's). clip_actions / normalize_actions / dtype / randomize: as RobosimEnv (each
    sub-environment draws its randomized parameters from its own reset seed; the draws are in
    the reset's infos["randomized"], {item: array over the sub-environments}, masked like the
    other infos). batch_size: the size of the groups the async mode's send() and recv() take
    (EnvPool's batch_size; a divisor of num_envs; None: num_envs)."""

    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, task: str, num_envs: int, endpoint: Optional[str] = None,
                 params: Optional[dict] = None, timeout: Optional[float] = None,
                 render_mode: Optional[str] = None,
                 autoreset_mode: Union[AutoresetMode, str] = AutoresetMode.NEXT_STEP,
                 max_episode_steps: Optional[int] = None, clip_actions: bool = True,
                 normalize_actions: bool = False, server_time_limit: bool = True,
                 dtype: Any = np.float32, task_document: Union[str, dict, None] = None,
                 randomize: Optional[dict] = None, batch_size: Optional[int] = None) -> None:
        if num_envs < 1:
            raise ValueError("num_envs must be at least 1, got %r" % (num_envs,))
        batch_size = int(num_envs if batch_size is None else batch_size)
        if not 1 <= batch_size <= num_envs or num_envs % batch_size:
            raise ValueError("batch_size %d: a divisor of num_envs (%d) is needed, the size of "
                             "the groups send() and recv() take" % (batch_size, num_envs))
        self.batch_size = batch_size
        self.autoreset_mode = autoreset_mode_of(autoreset_mode)
        self.task = task
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self._dtype = space_dtype(dtype)
        self._server = None
        self.client: Client = None  # type: ignore[assignment]  # set below; None once closed
        self.world_ids = []
        self.closed = False
        params = episode_params(params, max_episode_steps, server_time_limit)
        try:
            endpoint = endpoint or env_endpoint()
            if endpoint is None:
                self._server = LocalServer(max_worlds=self.num_envs)
                endpoint = self._server.endpoint
            self.client = Client(endpoint, timeout=timeout)
            if self._server is not None:
                self.client.server_log = self._server.log_path
            self.endpoint = endpoint
            missing = [c for c in NEEDS if c not in self.client.server["capabilities"]]
            if missing:
                raise RobosimError.from_name(
                    "UNIMPLEMENTED", "the server at %s (%s) lacks %s, which robosim.vector needs;"
                    " run a newer robosim-server" % (endpoint, self.client.server[
                        "server_version"], ", ".join(missing)), endpoint)
            for _ in range(self.num_envs):
                self.world_ids.append(self.client.create_world(
                    task=task, params=params, task_document=task_document,
                    randomize=randomize))
            self.world_spec = self.client.get_spec(self.world_ids[0])
        except BaseException:
            self.close()
            raise
        self._ids = np.array(self.world_ids, dtype=np.uint64)
        tspec = self.world_spec["task"]
        self.task_spec = tspec
        self.max_episode_steps = tspec["max_episode_steps"]
        self._actions = ActionMap(task, tspec, normalize_actions, clip_actions, self._dtype)
        self.single_observation_space = box(tspec["observation"], self._dtype)
        self.single_action_space = self._actions.space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = dict(self.metadata, autoreset_mode=self.autoreset_mode)
        self.metadata["render_fps"] = max(1, int(round(1.0 / self.world_spec["world"]["control_dt"])))
        self._rngs = [seeding.np_random(None)[0] for _ in range(self.num_envs)]
        self._needs_reset = np.zeros(self.num_envs, dtype=bool)  # NEXT_STEP: ended last step
        self._obs: Optional[np.ndarray] = None
        self._all = np.ones(self.num_envs, dtype=bool)
        self._all_request = None  # the request encoder of all the worlds (_batch)
        self._groups: list = []   # async mode: per group its request encoder and buffers
        self._sent: dict = {}     # request id -> its group, in flight
        self._last_group: Optional[int] = None  # the group recv() returned last

    # -- the batched request and its infos

    def _seeds(self, mask, seeds=None):
        """Server seeds for the sub-environments in mask: given ones, else drawn from each
        one's generator (as a single env does)."""
        out = np.zeros(self.num_envs, dtype=np.uint64)
        for i in np.flatnonzero(mask):
            if seeds is not None and seeds[i] is not None:
                self._rngs[i] = seeding.np_random(int(seeds[i]))[0]
                out[i] = int(seeds[i])
            else:
                out[i] = next_seed(self._rngs[i])
        return out

    def _seed_list(self, seed):
        """reset's seed as one per sub-environment (None: none given); seeds the vector env's
        own np_random from the first."""
        seeds: Optional[list] = None
        if seed is None:
            pass
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError("%d seeds for %d environments" % (len(seeds), self.num_envs))
        if seeds is not None and seeds[0] is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seeds[0])
        return seeds

    def _idle(self, what):
        """FAILED_PRECONDITION when async requests are in flight (step/reset would not see
        them)."""
        if self._sent:
            raise RobosimError.from_name(
                "FAILED_PRECONDITION", "%s with %d async groups in flight: recv() them first"
                % (what, len(self._sent)), self.endpoint)

    def _batch(self, idx, actions=None, reset=None, seeds=None):
        """One StepBatch.arrays of the sub-environments in idx (a mask), awaited: its columns
        as Client.recv_arrays gives them (views over the reply: copied by the callers)."""
        if idx is self._all:
            if self._all_request is None:
                self._all_request = self.client.arrays_request(self._ids)
            request = self._all_request
        else:
            request = self.client.arrays_request(self._ids[idx])
        if actions is not None:
            actions = actions.reshape(request.n, -1)
        self.client.send_arrays(None, actions=actions, request=request, reset=reset,
                                reset_seeds=seeds)
        _, r = self.client.recv_arrays()
        if r["errors"]:
            i, err = next(iter(r["errors"].items()))
            raise RobosimError(err.code, "sub-environment %d: %s" % (int(np.arange(
                self.num_envs)[idx][i]), err.message), self.endpoint)
        return r

    def _infos(self, r, mask):
        """Gymnasium's array infos from a step_arrays result: each key's values with its mask."""
        infos = {}
        n = len(mask)

        def put(key, values, dtype):
            full = np.zeros(n, dtype=dtype)
            full[mask] = values
            infos[key] = full
            infos["_" + key] = mask.copy()

        for k, key in enumerate(r["info_keys"]):
            put(key, r["info"][:, k], np.float64)
        if "success" in r["info_keys"]:
            put("is_success", r["info"][:, r["info_keys"].index("success")] != 0, bool)
        put("events", r["events"], np.int64)
        put("time", r["time"], np.float64)
        return infos

    def _put_randomized(self, infos, r, mask):
        """The draws of the sub-environments in mask (those just reset) into infos."""
        if not r["randomized_items"]:
            return
        sub = {}
        for k, item in enumerate(r["randomized_items"]):
            full = np.zeros(self.num_envs, dtype=np.float64)
            full[mask] = r["randomized"][:, k] if len(r["randomized"]) == mask.sum() \
                else r["randomized"][mask, k]
            sub[item] = full
        infos["randomized"], infos["_randomized"] = sub, mask.copy()

    # -- gymnasium API

    def reset(self, *, seed: Union[int, Sequence[Optional[int]], None] = None,
              options: Optional[dict] = None) -> tuple[np.ndarray, dict]:
        if self.closed:
            raise RobosimError.from_name("FAILED_PRECONDITION", "reset() after close()",
                                         self.endpoint)
        self._idle("reset()")
        mask = self._all
        if options and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"], dtype=bool)
            if mask.shape != (self.num_envs,):
                raise ValueError("reset_mask has shape %s for %d environments"
                                 % (mask.shape, self.num_envs))
        seeds = self._seed_list(seed)
        server_seeds = self._seeds(mask, seeds)
        r = self._batch(mask, reset=np.ones(int(mask.sum()), dtype=bool),
                        seeds=server_seeds[mask])
        if self._obs is None:
            self._obs = np.zeros(self.observation_space.shape or (), dtype=self._dtype)
        self._obs[mask] = r["observation"]
        self._needs_reset[mask] = False
        infos = self._infos(r, mask)
        full = np.zeros(self.num_envs, dtype=np.uint64)
        full[mask] = server_seeds[mask]
        infos["seed"], infos["_seed"] = full, mask.copy()
        self._put_randomized(infos, r, mask)
        return self._obs.copy(), infos

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        if self.closed:
            raise RobosimError.from_name("FAILED_PRECONDITION", "step() after close()",
                                         self.endpoint)
        if self._obs is None:
            raise RobosimError.from_name(
                "FAILED_PRECONDITION", "%s x %d: call reset() before step()"
                % (self.task, self.num_envs), self.endpoint)
        self._idle("step()")
        acts = self._actions(actions, self.endpoint, self.action_space.shape)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and self._needs_reset.any():
            resetting = self._needs_reset.copy()
            seeds = self._seeds(resetting)
            r = self._batch(self._all, actions=acts, reset=resetting, seeds=seeds)
        else:
            resetting = None
            r = self._batch(self._all, actions=acts)
        obs, rewards = r["observation"].astype(self._dtype), r["reward"].copy()
        terminated, truncated = r["terminated"].copy(), r["truncated"].copy()
        infos = self._infos(r, self._all)
        ended = terminated | truncated
        if resetting is not None:
            infos["seed"], infos["_seed"] = seeds, resetting
            self._put_randomized(infos, r, resetting)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._needs_reset = ended
        elif self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            final_obs = np.empty(self.num_envs, dtype=object)
            final_info = np.empty(self.num_envs, dtype=object)
            for i in np.flatnonzero(ended):
                final_obs[i] = obs[i].copy()
                final_info[i] = {k: v[i] for k, v in infos.items() if not k.startswith("_")}
            seeds = self._seeds(ended)
            rr = self._batch(ended, reset=np.ones(int(ended.sum()), dtype=bool),
                             seeds=seeds[ended])
            obs = obs.copy()
            obs[ended] = rr["observation"]  # cast to obs's dtype
            infos["seed"], infos["_seed"] = seeds, ended.copy()
            self._put_randomized(infos, rr, ended)
            infos.update(final_obs=final_obs, _final_obs=ended.copy(), final_info=final_info,
                         _final_info=ended.copy())
        self._obs = obs
        return obs, rewards, terminated, truncated, infos

    # -- async mode (EnvPool's send / recv)

    def _group_buffers(self):
        """Per group: its ids, request encoder and the preallocated arrays recv() fills."""
        if not self._groups:
            b, obs_shape = self.batch_size, self.single_observation_space.shape or ()
            for g in range(self.num_envs // b):
                env_ids = np.arange(g * b, (g + 1) * b)
                self._groups.append({
                    "env_id": env_ids,
                    "request": self.client.arrays_request(self._ids[env_ids]),
                    "obs": np.zeros((b,) + obs_shape, dtype=self._dtype),
                    "reward": np.zeros(b, dtype=np.float64),
                    "terminated": np.zeros(b, dtype=bool),
                    "truncated": np.zeros(b, dtype=bool)})
        return self._groups

    def _check_async(self, what):
        if self.closed:
            raise RobosimError.from_name("FAILED_PRECONDITION", "%s after close()" % what,
                                         self.endpoint)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            raise RobosimError.from_name(
                "FAILED_PRECONDITION", "%s: async mode resets on the next step (EnvPool's "
                "autoreset); make the env with autoreset_mode='next_step' or 'disabled'" % what,
                self.endpoint)

    def _send_group(self, g, actions=None, reset=None, seeds=None):
        grp = self._groups[g]
        rid = self.client.send_arrays(None, actions=actions, reset=reset, reset_seeds=seeds,
                                      request=grp["request"])
        self._sent[rid] = g

    def async_reset(self, *, seed: Union[int, Sequence[Optional[int]], None] = None) -> None:
        """Reset every sub-environment, group by group, without waiting: the new episodes'
        first observations come from recv(), one group at a time (EnvPool's async_reset).
        seed: as reset()'s."""
        self._check_async("async_reset()")
        if self._sent:
            raise RobosimError.from_name(
                "FAILED_PRECONDITION", "async_reset() with %d groups in flight: recv() them "
                "first" % len(self._sent), self.endpoint)
        seeds = self._seed_list(seed)
        server_seeds = self._seeds(self._all, seeds)
        self._needs_reset[:] = False
        if self._obs is None:
            self._obs = np.zeros(self.observation_space.shape or (), dtype=self._dtype)
        for g, grp in enumerate(self._group_buffers()):
            ids = grp["env_id"]
            self._send_group(g, reset=np.ones(len(ids), dtype=bool), seeds=server_seeds[ids])

    def send(self, actions: Any, env_id: Any = None) -> None:
        """Send the actions of one group (the batch_size sub-environments recv() returned last,
        or those `env_id` names, a group's ids as recv's info["env_id"] gave them) and return
        without waiting: recv() returns the group once the server has stepped it. A
        sub-environment whose episode ended at its last step is reset instead (its action
        ignored), as step() does."""
        self._check_async("send()")
        groups = self._group_buffers()
        if env_id is None:
            if self._last_group is None:
                raise RobosimError.from_name(
                    "FAILED_PRECONDITION", "send() without env_id before any recv(): name the "
                    "sub-environments (info['env_id'] of a recv)", self.endpoint)
            g = self._last_group
        else:
            ids = np.asarray(env_id, dtype=np.int64).reshape(-1)
            g = int(ids[0]) // self.batch_size if len(ids) else -1
            if not (0 <= g < len(groups)) or not np.array_equal(ids, groups[g]["env_id"]):
                raise ValueError("env_id must be one group's sub-environments as recv() "
                                 "returned them (%d groups of %d consecutive ids)"
                                 % (len(groups), self.batch_size))
        if g in self._sent.values():
            raise RobosimError.from_name(
                "FAILED_PRECONDITION", "send(): group %d (sub-environments %d..%d) is in "
                "flight already; recv() it first" % (g, g * self.batch_size,
                                                   (g + 1) * self.batch_size - 1),
                self.endpoint)
        grp = groups[g]
        acts = self._actions(actions, self.endpoint, (self.batch_size,)
                             + tuple(self.single_action_space.shape or ()))
        reset = seeds = None
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            mask = self._needs_reset[grp["env_id"]]
            if mask.any():
                reset = mask
                full = np.zeros(self.num_envs, dtype=bool)
                full[grp["env_id"]] = mask
                seeds = self._seeds(full)[grp["env_id"]]
        self._send_group(g, acts.reshape(self.batch_size, -1), reset, seeds)
        if self._last_group == g:
            self._last_group = None

    def recv(self, timeout: Optional[float] = None) -> tuple:
        """(obs, rewards, terminated, truncated, info) of the next group the server finished,
        whichever that is (EnvPool's recv): batch_size rows, info["env_id"] their
        sub-environments, info[key] the task's info figures, info["time"]. The arrays are the
        group's own buffers (see the module's text)."""
        self._check_async("recv()")
        if not self._sent:
            raise RobosimError.from_name("FAILED_PRECONDITION", "recv() with nothing in "
                                         "flight: async_reset() or send() first", self.endpoint)
        rid, r = self.client.recv_arrays(timeout)
        g = self._sent.pop(rid)
        grp = self._groups[g]
        ids = grp["env_id"]
        if r["errors"]:
            i, err = next(iter(r["errors"].items()))
            raise RobosimError(err.code, "sub-environment %d: %s" % (int(ids[i]), err.message),
                               self.endpoint)
        obs, term, trunc = grp["obs"], grp["terminated"], grp["truncated"]
        np.copyto(obs, r["observation"].reshape(obs.shape), casting="same_kind")
        np.copyto(grp["reward"], r["reward"])
        np.copyto(term, r["terminated"])
        np.copyto(trunc, r["truncated"])
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._needs_reset[ids] = term | trunc
        info = {"env_id": ids, "time": r["time"]}
        for k, key in enumerate(r["info_keys"]):
            info[key] = r["info"][:, k]
        if "success" in info:
            info["is_success"] = info["success"] != 0
        self._last_group = g
        return obs, grp["reward"], term, trunc, info

    def _drain(self, timeout: float = 10.0) -> None:
        """Receive every answer still in flight (close(): no request left behind)."""
        while self._sent and self.client is not None:
            try:
                rid, _ = self.client.recv_arrays(timeout)
            except RobosimError:
                break
            self._sent.pop(rid, None)
        self._sent.clear()

    def render(self) -> Optional[tuple]:
        if self.render_mode != "rgb_array":
            return None
        frames = []
        for wid in self.world_ids:
            state = self.client.get_state(wid)
            obs = state["task"]["observation"] if state["task"] else None
            frames.append(draw_world(self.world_spec, state, task_targets(
                self.task, obs, self.task_spec["observation"])))
        return tuple(frames)

    def close_extras(self, **kwargs: Any) -> None:
        if self.client is not None:
            self._drain()
            for wid in self.world_ids:
                try:
                    self.client.destroy_world(wid)
                except RobosimError:
                    pass
            self.client.close()
            self.client = None  # type: ignore[assignment]
        if self._server is not None:
            self._server.close()
            self._server = None

    def close(self, **kwargs: Any) -> None:
        if getattr(self, "closed", False):
            return
        self.close_extras(**kwargs)
        self.closed = True


def make(id: str, num_envs: int = 1, endpoint: Optional[str] = None,
         **kwargs: Any) -> RobosimVectorEnv:
    """A RobosimVectorEnv of `num_envs` worlds of task `id` ("robosim/FingerPush-v0" or
    "FingerPush-v0", or an id robosim.register_task registered for a task document); other
    keyword arguments go to RobosimVectorEnv."""
    task = id.split("/", 1)[1] if id.startswith("robosim/") else id
    spec = gym.registry.get(id)
    if spec is not None and spec.kwargs.get("task_document"):  # a declared task's id
        task = getattr(spec, "task", None) or spec.kwargs["task"]
        kwargs.setdefault("task_document", spec.kwargs["task_document"])
    return RobosimVectorEnv(task, num_envs, endpoint=endpoint, **kwargs)
