"""Gymnasium environments for the server's tasks, registered as "robosim/<Task>" (importing
robosim registers them):

    import gymnasium as gym
    import robosim  # noqa: F401

    env = gym.make("robosim/FingerPush-v0")                 # starts a local server itself
    env = gym.make("robosim/FingerPush-v0", endpoint="tcp://127.0.0.1:5555")

The reward, termination (success) and truncation (time limit) are computed by the server
(TaskSpec.reward documents each task's reward); the observation and action spaces are Boxes
built from the TaskSpec's bounds. reset(seed=s) reseeds the world, so the same seed and the
same actions give identical observations. An action of the wrong shape is refused here, one
outside the bounds by the server (robosim.RobosimError OUT_OF_RANGE)."""
import gymnasium as gym
import numpy as np

from .client import Client
from .errors import RobosimError
from .render import draw_world, task_targets
from .server import LocalServer

TASKS = ("FingerPush-v0", "FingerTouch-v0", "SerialArmReach-v0", "ParallelArmReach-v0",
         "DiffDriveGoal-v0")

SEED_RANGE = 2 ** 63 - 1


def next_seed(rng):
    """The server seed for a reset without an explicit seed: drawn from the env's np_random, so
    a sequence of resets after one seeded reset is deterministic."""
    return int(rng.integers(0, SEED_RANGE))


def box(vars_):
    low = np.array([v["lower"] for v in vars_], dtype=np.float64)
    high = np.array([v["upper"] for v in vars_], dtype=np.float64)
    return gym.spaces.Box(low=low, high=high, dtype=np.float64)


def step_info(state, sensor_names):
    """The info dict of a step: the task's info figures, is_success, the step's events and
    each entity's sensor readings by name."""
    task = state["task"]
    info = dict(task["info"])
    if "success" in info:
        info["is_success"] = bool(info["success"])
    info["events"] = state["events"]
    info["sensors"] = {name: {n: float(v) for n, v in zip(sensor_names[name], ent["sensors"])}
                       for name, ent in state["entities"].items() if name in sensor_names}
    info["time"] = state["time"]
    return info


class RobosimEnv(gym.Env):
    """One world of a robosim task, on a given server or on a local one started here.

    task: the task name ("FingerPush-v0"). endpoint: "tcp://host:port" of a running server;
    None starts a local robosim-server (stopped by close()). params: parameter overrides for
    CreateWorld ({"entity.name": values}). timeout: seconds per request."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(self, task="FingerPush-v0", endpoint=None, render_mode=None, params=None,
                 timeout=10.0, client=None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError("render_mode %r is not supported (only 'rgb_array')" % render_mode)
        self.task = task
        self.render_mode = render_mode
        self._server = None
        self._owns_client = client is None
        self.world_id = None
        try:
            if client is None:
                if endpoint is None:
                    self._server = LocalServer()
                    endpoint = self._server.endpoint
                client = Client(endpoint, timeout=timeout)
            self.client = client
            self.endpoint = client.endpoint
            self.world_id = client.create_world(task=task, params=params, seed=0)
            self.world_spec = client.get_spec(self.world_id)
        except BaseException:
            self.close()
            raise
        tspec = self.world_spec["task"]
        self.task_spec = tspec
        self.max_episode_steps = tspec["max_episode_steps"]
        self.observation_space = box(tspec["observation"])
        self.action_space = box(tspec["action"])
        self.metadata = dict(self.metadata)
        dt = self.world_spec["world"]["control_dt"]
        self.metadata["render_fps"] = max(1, int(round(1.0 / dt)))
        self._sensor_names = {name: [v["name"] for v in e["sensors"]]
                              for name, e in self.world_spec["entities"].items()}
        self._state = None

    # -- gymnasium API

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        server_seed = seed if seed is not None else next_seed(self.np_random)
        self._state = self.client.reset(self.world_id, seed=server_seed)
        info = step_info(self._state, self._sensor_names)
        info["seed"] = server_seed
        return self._state["task"]["observation"], info

    def step(self, action):
        a = self.check_action(action)
        self._state = self.client.step(self.world_id, steps=1, action=a)
        t = self._state["task"]
        return (t["observation"], t["reward"], t["terminated"], t["truncated"],
                step_info(self._state, self._sensor_names))

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        state = self._state or self.client.get_state(self.world_id)
        targets = task_targets(self.task, state["task"]["observation"] if state["task"] else None)
        return draw_world(self.world_spec, state, targets)

    def close(self):
        client, self.client = getattr(self, "client", None), None
        if client is not None and self.world_id is not None:
            try:
                client.destroy_world(self.world_id)
            except RobosimError:
                pass
        if client is not None and self._owns_client:
            client.close()
        server, self._server = self._server, None
        if server is not None:
            server.close()
        super().close()

    # -- helpers

    def check_action(self, action):
        """The action as a flat list of floats, after checking its shape (a wrong shape raises
        RobosimError INVALID_ARGUMENT here; the bounds are checked by the server)."""
        a = np.asarray(action, dtype=np.float64)
        if a.shape != self.action_space.shape:
            names = ", ".join(v["name"] for v in self.task_spec["action"])
            raise RobosimError.from_name(
                "INVALID_ARGUMENT", "%s takes an action of shape %s (%s), got shape %s"
                % (self.task, self.action_space.shape, names, a.shape), self.endpoint)
        return a.tolist()

    @property
    def state(self):
        """The last State dict (entities, events, task step)."""
        return self._state


def register_envs():
    """Register robosim/<Task> for every task (idempotent)."""
    for task in TASKS:
        env_id = "robosim/" + task
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point="robosim.envs:RobosimEnv",
                         kwargs={"task": task}, disable_env_checker=False)
