"""Gymnasium environments for the server's tasks, registered as "robosim/<Task>" (importing
robosim registers them):

    import gymnasium as gym
    import robosim  # noqa: F401

    env = gym.make("robosim/FingerPush-v0")                 # starts a local server itself
    env = gym.make("robosim/FingerPush-v0", endpoint="tcp://127.0.0.1:5555")
    env = gym.make("robosim/FingerPush-v0", max_episode_steps=500)   # a longer episode
    venv = gym.make_vec("robosim/FingerPush-v0", 64, vectorization_mode="vector_entry_point")

Without an endpoint the env uses $ROBOSIM_ENDPOINT, else starts a local robosim-server.

The reward, termination (success) and truncation (time limit) are computed by the server
(TaskSpec.reward documents each task's reward); the observation and action spaces are Boxes
built from the TaskSpec's bounds. Each task's episode limit is registered as Gymnasium's
max_episode_steps, so gym.make's TimeLimit truncates the episode, at the registered limit or at
the one given to gym.make(..., max_episode_steps=N); the registered envs lift the server's own
limit (server_time_limit=False) so that it never truncates first. The registered limit is the
TaskSpec's, read from a server (see TaskEnvSpec). RobosimEnv made directly
keeps the server's limit, or sets the world's (max_episode_steps=N). reset(seed=s) reseeds the world, so the same seed and the same actions give
identical observations. Actions of the wrong shape are refused here; actions are clipped to the
action space (clip_actions=True, as a float32 policy output at a bound needs), or with
normalize_actions=True the action space is [-1, 1] per value, mapped linearly onto the task's
bounds. Non-finite actions are refused by the server (INVALID_ARGUMENT). The observation and
action spaces are float32 by default (what Stable-Baselines3 expects; the server computes in
float64 and the observation is rounded to float32); dtype=np.float64 gives the server's values
bit for bit."""
from __future__ import annotations

import struct
import weakref
from typing import Any, Callable, Optional, Sequence, SupportsFloat, Union

import gymnasium as gym
import numpy as np

from .client import Client, env_endpoint, event_dict, state_dict
from .errors import RobosimError
from .render import draw_world, task_targets
from .server import LocalServer
from .specs import builtin_task_names

# the server's tasks registered as Gymnasium ids (their limits come from the TaskSpec), read
# from the task family files the server is built from, in the order its Hello lists them
TASKS = builtin_task_names()

# each task's episode limit (TaskSpec.max_episode_steps) as the servers this process talked to
# report it: filled by every env made here, else on demand by task_limit()
TASK_LIMITS: dict = {}

SEED_RANGE = 2 ** 63 - 1
NO_LIMIT = 10 ** 9  # the largest max_episode_steps a world takes: no truncation in practice


def episode_params(params: Optional[dict], max_episode_steps: Optional[int],
                   server_time_limit: bool) -> dict:
    """A copy of a world's params with its episode limit: max_episode_steps when given, else the
    task's own when server_time_limit, else none (NO_LIMIT)."""
    params = dict(params or {})
    if max_episode_steps is not None:
        params["max_episode_steps"] = int(max_episode_steps)
    elif not server_time_limit:
        params["max_episode_steps"] = NO_LIMIT
    return params


def next_seed(rng: np.random.Generator) -> int:
    """The server seed for a reset without an explicit seed: drawn from the env's np_random, so
    a sequence of resets after one seeded reset is deterministic."""
    return int(rng.integers(0, SEED_RANGE))


def space_dtype(dtype: Any) -> np.dtype:
    """np.float64 or np.float32 (the spaces' dtypes an env takes), from a dtype or its name."""
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError("dtype must be float64 or float32, got %s" % dt)
    return dt


def box(vars_: list[dict], dtype: Any = np.float32) -> gym.spaces.Box:
    """The Box of a TaskSpec's variables (their lower and upper bounds) in dtype."""
    dtype = space_dtype(dtype)
    low = np.array([v["lower"] for v in vars_], dtype=np.float64).astype(dtype)
    high = np.array([v["upper"] for v in vars_], dtype=np.float64).astype(dtype)
    return gym.spaces.Box(low=low, high=high, dtype=dtype)


def info_builder(info_keys: Sequence[str], sensor_list: list,
                 full: bool = True) -> Callable[[Any, Any], dict]:
    """The function (State message, its TaskStep) -> the info dict of a step: the task's info
    figures by name, is_success (where the task has "success"), the step's events and each
    entity's sensor readings by name, the time. info_keys: the task's info names (read once,
    not from every reply); sensor_list: [(entity, [sensor names])] in the order of the State's
    entities (the spec's). full=False: without the events and the sensors. The single env's
    hottest Python, so its loop-invariant work is done here once: a State with other entities
    than the spec's (none should) is read by name."""
    keys = list(info_keys)
    success = "success" in keys
    names = dict(sensor_list)
    n = len(sensor_list)
    first, first_names = sensor_list[0] if sensor_list else (None, None)

    def by_name(entities):
        return {e.name: dict(zip(names[e.name], e.sensors)) for e in entities}

    def brief(s, t):
        d = dict(zip(keys, t.info_values))
        if success:
            d["is_success"] = d["success"] != 0.0
        d["time"] = s.time
        return d

    def info(s, t):
        d = dict(zip(keys, t.info_values))
        if success:
            d["is_success"] = d["success"] != 0.0
        events = s.events
        d["events"] = [event_dict(e) for e in events] if events else []
        entities = s.entities
        if len(entities) != n:
            d["sensors"] = by_name(entities)
        elif n == 1:
            d["sensors"] = {first: dict(zip(first_names, entities[0].sensors))}
        else:
            d["sensors"] = {name: dict(zip(ns, e.sensors))
                            for (name, ns), e in zip(sensor_list, entities)}
        d["time"] = s.time
        return d

    return info if full else brief


class ActionMap:
    """What the env does to an action before the server sees it: the shape check, then either
    clipping to the task's bounds or the map from [-1, 1] onto them (normalize)."""

    def __init__(self, task: str, task_spec: dict, normalize: bool = False, clip: bool = True,
                 dtype: Any = np.float32) -> None:
        self.task = task
        self.names = ", ".join(v["name"] for v in task_spec["action"])
        self.bounds = box(task_spec["action"], np.float64)
        self.normalize = bool(normalize)
        self.clip = bool(clip)
        self.low, self.high = self.bounds.low, self.bounds.high
        self.half_range = 0.5 * (self.high - self.low)
        # the same as Python floats, for packed()
        self._low, self._high = self.low.tolist(), self.high.tolist()
        self._half_range = self.half_range.tolist()
        self._struct = struct.Struct("<%dd" % self.low.size)
        dtype = space_dtype(dtype)
        self.space = (gym.spaces.Box(-1.0, 1.0, self.low.shape, dtype=dtype)
                      if self.normalize else box(task_spec["action"], dtype))
        self._shape = self.space.shape

    def __call__(self, action: Any, endpoint: Optional[str] = None,
                 shape: Optional[tuple] = None) -> np.ndarray:
        a = np.asarray(action, dtype=np.float64)
        shape = self.space.shape if shape is None else shape
        if a.shape != shape:
            raise RobosimError.from_name(
                "INVALID_ARGUMENT", "%s takes an action of shape %s (%s), got shape %s"
                % (self.task, shape, self.names, a.shape), endpoint)
        if self.normalize:
            return self.low + (np.minimum(np.maximum(a, -1.0), 1.0) + 1.0) * self.half_range
        # minimum(maximum()) rather than np.clip: the same values, a third of the time
        return np.minimum(np.maximum(a, self.low), self.high) if self.clip else a

    def packed(self, action: Any, endpoint: Optional[str] = None) -> bytes:
        """The action as a Step request carries it (little-endian doubles), mapped as
        __call__ maps it: the single env's path, in plain Python for a flat array of the
        action's shape (its few values cost less so than through numpy's calls, most of all
        when the process has just woken from waiting on the server)."""
        if type(action) is not np.ndarray or action.shape != self._shape:
            return np.ascontiguousarray(self(action, endpoint), dtype="<f8").tobytes()
        values = action.tolist()
        if self.normalize:
            values = [lo + ((-1.0 if x < -1.0 else 1.0 if x > 1.0 else x) + 1.0) * h
                      for x, lo, h in zip(values, self._low, self._half_range)]
        elif self.clip:  # NaN passes, as through np.minimum / np.maximum: the server refuses it
            values = [lo if x < lo else hi if x > hi else x
                      for x, lo, hi in zip(values, self._low, self._high)]
        return self._struct.pack(*values)


class RobosimEnv(gym.Env):
    """One world of a robosim task, on a given server or on a local one started here.

    task: the task name ("FingerPush-v0"). endpoint: "tcp://host:port" of a running server;
    None: $ROBOSIM_ENDPOINT, else a local robosim-server (stopped by close()). params:
    parameter overrides for CreateWorld ({"entity.name": values}). randomize: parameters drawn
    at every reset, from the reset's seed (so a seed fixes the episode's physics), e.g.
    {"finger.static_friction": "uniform(0.5, 1.5)"} (the Monte Carlo samplers' syntax, uniform
    or normal); reset's info["randomized"] holds the draws. timeout: seconds per request
    (None: $ROBOSIM_TIMEOUT, else 60).
    max_episode_steps: the server's episode limit for this world (None: the task's).
    server_time_limit: False lifts the server's limit (gym.make's TimeLimit truncates instead;
    the registration sets it).
    clip_actions: clip actions to the bounds (else the server refuses those outside with
    OUT_OF_RANGE). normalize_actions: the action space is [-1, 1]^n, mapped onto the bounds.
    dtype: the spaces' dtype, np.float32 (default) or np.float64 (the server's values bit for
    bit). task_document: a declared task (JSON text or dict, see register_task) that the
    server registers and runs; `task` is its name. full_info: info holds the step's events and
    every entity's sensors (default); False leaves them out (the task's figures, is_success
    and the time remain: what most training loops read), a few microseconds less per step;
    env.state still has them.

    The env pickles (cloudpickle, SubprocVecEnv, Ray) as its constructor arguments: the copy
    makes its own world (and its own local server when the original had one); reset it."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(self, task: str = "FingerPush-v0", endpoint: Optional[str] = None,
                 render_mode: Optional[str] = None, params: Optional[dict] = None,
                 timeout: Optional[float] = None, client: Optional[Client] = None,
                 max_episode_steps: Optional[int] = None, clip_actions: bool = True,
                 normalize_actions: bool = False, server_time_limit: bool = True,
                 dtype: Any = np.float32, task_document: Union[str, dict, None] = None,
                 randomize: Optional[dict] = None, full_info: bool = True) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError("render_mode %r is not supported (only 'rgb_array')" % render_mode)
        self._init_args = dict(task=task, endpoint=endpoint, render_mode=render_mode,
                               params=params, timeout=timeout,
                               max_episode_steps=max_episode_steps, clip_actions=clip_actions,
                               normalize_actions=normalize_actions,
                               server_time_limit=server_time_limit, dtype=dtype,
                               task_document=task_document, randomize=randomize,
                               full_info=full_info)
        self._full_info = bool(full_info)
        self._dtype = space_dtype(dtype)
        self.task = task
        self.render_mode = render_mode
        self._server = None
        self._owns_client = client is None
        # set below; None once closed (the methods check that first: _check_open)
        self.client: Client = None  # type: ignore[assignment]
        self.world_id: int = None  # type: ignore[assignment]
        self._closed = False
        params = episode_params(params, max_episode_steps, server_time_limit)
        try:
            if client is None:
                endpoint = endpoint or env_endpoint()
                if endpoint is None:
                    self._server = LocalServer()
                    endpoint = self._server.endpoint
                client = Client(endpoint, timeout=timeout)
                if self._server is not None:
                    client.server_log = self._server.log_path
            self.client = client
            self.endpoint = client.endpoint
            # an env never closed releases its socket and its server when collected or at exit
            self._finalizer = weakref.finalize(
                self, _release, client if self._owns_client else None, self._server)
            self.world_id = client.create_world(task=task, params=params, seed=0,
                                                task_document=task_document,
                                                randomize=randomize)
            self.world_spec = client.get_spec(self.world_id)
            if task not in TASK_LIMITS:  # the task's own limit, for its registration
                TASK_LIMITS[task] = (self.world_spec["task"]["max_episode_steps"]
                                     if "max_episode_steps" not in params
                                     else _probe_limit(client, task))
        except BaseException:
            self.close()
            raise
        tspec = self.world_spec["task"]
        self.task_spec = tspec
        self.max_episode_steps = tspec["max_episode_steps"]
        self.observation_space = box(tspec["observation"], self._dtype)
        self._nobs = self.observation_space.shape[0]
        self._actions = ActionMap(task, tspec, normalize_actions, clip_actions, self._dtype)
        self.action_space = self._actions.space
        self.metadata = dict(self.metadata)
        dt = self.world_spec["world"]["control_dt"]
        self.metadata["render_fps"] = max(1, int(round(1.0 / dt)))
        self._sensor_names = {name: [v["name"] for v in e["sensors"]]
                              for name, e in self.world_spec["entities"].items()}
        # the same in the spec's entity order, which States keep (info_builder)
        self._sensor_list = list(self._sensor_names.items())
        self._msg = None  # the last State message (decoded on demand: see `state`)
        self._info: Any = None  # the info dict's builder, made at the first reset (info_builder)
        self._step: Any = None  # step_msg on this world, once reset; None again once closed
        self._pack = self._actions.packed

    # -- gymnasium API

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict] = None) -> tuple[np.ndarray, dict]:
        self._check_open("reset")
        super().reset(seed=seed)
        server_seed = seed if seed is not None else next_seed(self.np_random)
        self._msg = s = self.client.reset_msg(self.world_id, seed=server_seed)
        if self._info is None:  # the task's info names, read once
            self._info = info_builder(s.task.info_keys, self._sensor_list, self._full_info)
            self._step = self.client.stepper(self.world_id)
        info = self._info(s, s.task)
        info["seed"] = server_seed
        if s.randomized:
            info["randomized"] = {d.item: d.value for d in s.randomized}
        return np.fromiter(s.task.observation, self._dtype, self._nobs), info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict]:
        # one check for both refusals (closed, not reset): the hot path reads few attributes
        step = self._step
        if step is None:
            self._check_open("step")
            raise RobosimError.from_name(
                "FAILED_PRECONDITION", "%s: call reset() before step()" % self.task, self.endpoint)
        self._msg = s = step(self._pack(action, self.endpoint))
        t = s.task
        return (np.fromiter(t.observation, self._dtype, self._nobs), t.reward, t.terminated,
                t.truncated, self._info(s, t))

    def render(self) -> Optional[np.ndarray]:
        if self.render_mode != "rgb_array":
            return None
        self._check_open("render")
        state = self.state or self.client.get_state(self.world_id)
        targets = task_targets(self.task, state["task"]["observation"] if state["task"] else None,
                               self.task_spec["observation"])
        return draw_world(self.world_spec, state, targets)

    def close(self) -> None:
        self._closed = True
        self._step = None
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer.detach()
        client, self.client = getattr(self, "client", None), None  # type: ignore[assignment]
        if client is not None and self.world_id is not None:
            try:
                client.destroy_world(self.world_id)
            except RobosimError:
                pass
        if client is not None and self._owns_client:
            client.close()
        server, self._server = getattr(self, "_server", None), None
        if server is not None:
            server.close()
        super().close()

    # -- pickling: by the constructor's arguments (a world lives on its server)

    def __getstate__(self):
        args = dict(self._init_args)
        if self._server is not None:
            args["endpoint"] = None  # the copy starts a server of its own
        elif args["endpoint"] is None:
            args["endpoint"] = self.endpoint
        return {"init_args": args}

    def __setstate__(self, state):
        self.__init__(**state["init_args"])

    # -- helpers

    def _check_open(self, what):
        if self._closed:
            raise RobosimError.from_name(
                "FAILED_PRECONDITION", "%s: %s() after close(); make a new environment"
                % (self.task, what), getattr(self, "endpoint", None))

    def check_action(self, action: Any) -> np.ndarray:
        """The action as sent to the server (a flat float64 array), after the shape check
        (RobosimError INVALID_ARGUMENT) and clipping or the map from [-1, 1]."""
        return self._actions(action, self.endpoint)

    @property
    def state(self) -> Optional[dict]:
        """The last State dict (entities, events, task step)."""
        return state_dict(self._msg) if self._msg is not None else None


def _release(client: Optional[Client], server: Optional[LocalServer]) -> None:
    """What close() releases, for an env collected or left open at exit (weakref.finalize)."""
    if client is not None:
        client.close()
    if server is not None:
        server.close()


def _probe_limit(client: Client, task: str) -> int:
    """The task's own episode limit, from the TaskSpec of a world made and destroyed for it."""
    wid = client.create_world(task=task)
    try:
        return client.get_spec(wid)["task"]["max_episode_steps"]
    finally:
        client.destroy_world(wid)


def fetch_task_limits(endpoint: Optional[str] = None) -> dict:
    """Every task's episode limit (TaskSpec.max_episode_steps) from a server: `endpoint`, else
    $ROBOSIM_ENDPOINT, else a local robosim-server started for the question; fills
    TASK_LIMITS and returns it."""
    endpoint = endpoint or env_endpoint()
    server = LocalServer() if endpoint is None else None
    try:
        with Client(server.endpoint if server else endpoint) as c:
            for task in c.server["tasks"]:
                if task not in TASK_LIMITS:
                    TASK_LIMITS[task] = _probe_limit(c, task)
    finally:
        if server is not None:
            server.close()
    return TASK_LIMITS


def task_limit(task: str) -> int:
    """The task's episode limit: as an env made in this process found it, else asked of a
    server once (fetch_task_limits)."""
    if task not in TASK_LIMITS:
        fetch_task_limits()
    return TASK_LIMITS[task]


class TaskEnvSpec(gym.envs.registration.EnvSpec):
    """The registration of a robosim task: its max_episode_steps, while not set otherwise, is
    the task's own limit as the server's TaskSpec gives it (task_limit(self.task)), read
    when first asked for. gym.make asks after it has made the env, which has recorded the limit
    from its own world by then; gym.make_vec and gym.spec(id).max_episode_steps before any env
    of the task exists ask a server once per process (fetch_task_limits)."""

    @property
    def max_episode_steps(self) -> Optional[int]:
        v = self.__dict__.get("_max_episode_steps")
        return task_limit(self.__dict__["task"]) if v is None else v

    @max_episode_steps.setter
    def max_episode_steps(self, value: Optional[int]) -> None:
        self.__dict__["_max_episode_steps"] = value


def register_task(env_id: str, task: str, entry_point: str = "robosim.envs:RobosimEnv",
                  vector_entry_point: Optional[str] = "robosim.vector:RobosimVectorEnv",
                  **kwargs: Any) -> None:
    """Register env_id (idempotent) for the server task `task`, its episode limit the
    TaskSpec's (TaskEnvSpec) and enforced by gym.make's TimeLimit: the registered env lifts the
    server's own limit (server_time_limit=False)."""
    if env_id in gym.registry:
        return
    spec = TaskEnvSpec(
        id=env_id, entry_point=entry_point, vector_entry_point=vector_entry_point,
        kwargs=dict(kwargs, task=task, server_time_limit=False), disable_env_checker=False)
    setattr(spec, "task", task)  # kept apart from kwargs, which gym.make_vec moves out of its copy
    gym.registry[env_id] = spec


def register_task_document(env_id: str, document: Union[str, dict], **kwargs: Any) -> str:
    """Register the Gymnasium id env_id for a declared task: `document` is a task document
    (a dict, or its JSON text) naming the observation, action, reward, success, termination,
    truncation and resets (docs/python.md, "Tasks without C", describes the format). Each
    env made from env_id sends the document with its CreateWorld, so the task runs on any
    server (a local one or `endpoint=`); the server validates it and names a bad item in its
    error. Returns the task's name. gym.make(env_id) and gym.make_vec(env_id, n,
    vectorization_mode="vector_entry_point") then work as for the built-in tasks."""
    import json
    doc = json.loads(document) if isinstance(document, str) else dict(document)
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("a task document needs a 'name' (e.g. \"MyReach-v0\")")
    max_steps = doc.get("max_steps")
    if isinstance(max_steps, int) and max_steps > 0:
        TASK_LIMITS.setdefault(name, max_steps)  # the document is the task's source
    text = json.dumps(doc)
    if env_id in gym.registry and gym.registry[env_id].kwargs.get("task_document") != text:
        del gym.registry[env_id]  # a new document for the id replaces the old registration
    register_task(env_id, name, task_document=text, **kwargs)
    return name


def register_envs() -> None:
    """Register robosim/<Task> for every task (idempotent), with its episode limit and a vector
    entry point (gym.make_vec(..., vectorization_mode="vector_entry_point") gives robosim's
    batched vector env). The goal-conditioned variants: robosim.goal.register_goal_envs."""
    for task in TASKS:
        register_task("robosim/" + task, task)
