"""robosim.vector.make(id, num_envs=N): a Gymnasium VectorEnv of N worlds of one task on one
server, stepped by one StepBatch request per step (the server steps the worlds on its worker
threads; each result is exactly what stepping that world alone gives).

Autoreset mode: SAME_STEP. When a sub-environment's episode ends, the step that ended it returns
the first observation of the next episode (the world is reset in the same call), and the final
observation and info of the ended episode are kept in infos["final_obs"] / infos["final_info"]
(with the masks infos["_final_obs"] / infos["_final_info"]), as Gymnasium's SAME_STEP vector
environments do. Seeding follows Gymnasium: reset(seed=s) seeds sub-environment i with s + i,
and later resets draw their seeds from each sub-environment's own generator, the same way a
single robosim environment does, so the vector environment and N separate environments given
the same seeds and actions see the same observations."""
import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector.utils import batch_space
from gymnasium.vector.vector_env import AutoresetMode

from .client import Client
from .envs import box, next_seed, step_info
from .errors import RobosimError
from .render import draw_world, task_targets
from .server import LocalServer


class RobosimVectorEnv(gym.vector.VectorEnv):
    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, task, num_envs, endpoint=None, params=None, timeout=30.0,
                 render_mode=None):
        if num_envs < 1:
            raise ValueError("num_envs must be at least 1, got %r" % (num_envs,))
        self.task = task
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self._server = None
        self.client = None
        self.world_ids = []
        try:
            if endpoint is None:
                self._server = LocalServer()
                endpoint = self._server.endpoint
            self.client = Client(endpoint, timeout=timeout)
            self.endpoint = endpoint
            for _ in range(self.num_envs):
                self.world_ids.append(self.client.create_world(task=task, params=params))
            self.world_spec = self.client.get_spec(self.world_ids[0])
        except BaseException:
            self.close()
            raise
        tspec = self.world_spec["task"]
        self.task_spec = tspec
        self.single_observation_space = box(tspec["observation"])
        self.single_action_space = box(tspec["action"])
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = dict(self.metadata)
        self.metadata["render_fps"] = max(1, int(round(1.0 / self.world_spec["world"]["control_dt"])))
        self._sensor_names = {name: [v["name"] for v in e["sensors"]]
                              for name, e in self.world_spec["entities"].items()}
        self._rngs = [seeding.np_random(None)[0] for _ in range(self.num_envs)]
        self._states = [None] * self.num_envs
        # one StepBatch request per step when the server has it
        self.batched = "step_batch" in self.client.server["capabilities"]

    def _reset_one(self, i, seed=None):
        if seed is not None:
            self._rngs[i] = seeding.np_random(seed)[0]
            server_seed = seed
        else:
            server_seed = next_seed(self._rngs[i])
        self._states[i] = self.client.reset(self.world_ids[i], seed=server_seed)
        info = step_info(self._states[i], self._sensor_names)
        info["seed"] = server_seed
        return self._states[i]["task"]["observation"], info

    def reset(self, *, seed=None, options=None):
        if seed is None:
            seeds = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError("%d seeds for %d environments" % (len(seeds), self.num_envs))
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seeds[0])
        obs = np.zeros(self.observation_space.shape, dtype=np.float64)
        infos = {}
        for i, s in enumerate(seeds):
            obs[i], info = self._reset_one(i, s)
            infos = self._add_info(infos, info, i)
        return obs, infos

    def step(self, actions):
        actions = np.asarray(actions, dtype=np.float64)
        if actions.shape != self.action_space.shape:
            raise RobosimError.from_name(
                "INVALID_ARGUMENT", "%s x %d takes actions of shape %s, got shape %s"
                % (self.task, self.num_envs, self.action_space.shape, actions.shape),
                self.endpoint)
        items = [{"world_id": wid, "action": actions[i].tolist(), "steps": 1}
                 for i, wid in enumerate(self.world_ids)]
        if self.batched:
            results = self.client.step_batch(items)
        else:  # a server without StepBatch: pipelined Steps, the same results
            results = self.client.step_pipelined(items)
        for r in results:
            if isinstance(r, RobosimError):
                raise r
        obs = np.zeros(self.observation_space.shape, dtype=np.float64)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        infos = {}
        for i, state in enumerate(results):
            self._states[i] = state
            t = state["task"]
            rewards[i], terminated[i], truncated[i] = t["reward"], t["terminated"], t["truncated"]
            info = step_info(state, self._sensor_names)
            if terminated[i] or truncated[i]:
                final = {"final_obs": t["observation"], "final_info": info}
                obs[i], info = self._reset_one(i)
                info = {**info, **final}
            else:
                obs[i] = t["observation"]
            infos = self._add_info(infos, info, i)
        return obs, rewards, terminated, truncated, infos

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        frames = []
        for i, wid in enumerate(self.world_ids):
            state = self._states[i] or self.client.get_state(wid)
            obs = state["task"]["observation"] if state["task"] else None
            frames.append(draw_world(self.world_spec, state, task_targets(self.task, obs)))
        return frames

    def close_extras(self, **kwargs):
        if self.client is not None:
            for wid in self.world_ids:
                try:
                    self.client.destroy_world(wid)
                except RobosimError:
                    pass
            self.client.close()
            self.client = None
        if self._server is not None:
            self._server.close()
            self._server = None

    def close(self, **kwargs):
        if getattr(self, "closed", False):
            return
        self.close_extras(**kwargs)
        self.closed = True


def make(id, num_envs=1, endpoint=None, **kwargs):
    """A RobosimVectorEnv of `num_envs` worlds of task `id` ("robosim/FingerPush-v0" or
    "FingerPush-v0"); other keyword arguments go to RobosimVectorEnv."""
    task = id.split("/", 1)[1] if id.startswith("robosim/") else id
    return RobosimVectorEnv(task, num_envs, endpoint=endpoint, **kwargs)
