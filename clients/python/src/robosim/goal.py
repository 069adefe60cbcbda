"""Goal-conditioned variants of the reach and push tasks, for hindsight experience replay (HER),
in Gymnasium-Robotics' GoalEnv convention:

    env = gym.make("robosim/SerialArmReachGoal-v1")
    obs, info = env.reset(seed=0)   # {"observation", "achieved_goal", "desired_goal"}
    r = env.unwrapped.compute_reward(obs["achieved_goal"], obs["desired_goal"], info)

Each one runs its -v1 task's world (same dynamics, actions, seeding, termination and
truncation). The observation is the -v1 task's; the desired goal is the target the server drew
for the episode, the achieved goal the end effector's (or the object's) position, both read
from the -v1 observation by the names GetSpec gives them and converted to metres by their units.

The reward is the GoalEnv one, a function of the goals alone (so a relabelled goal gets its own
reward): sparse (the default), -1 while the distance d between the goals is at least the task's
success tolerance and 0 within it; dense, -d in metres. compute_reward(achieved, desired, info)
takes single goals or batches (goals in the last axis) and is what step() returns. Termination
stays the server's (the task's success, which also asks the robot or object to be at rest)."""
from __future__ import annotations

from typing import Any, Optional, SupportsFloat

import gymnasium as gym
import numpy as np

from .envs import RobosimEnv, register_task, space_dtype
from .render import unit_scale

# goal variant -> (-v1 task, achieved goal's observation names, desired goal's, the task's
# success tolerance in m: |x_o - x*| < 0.05 m, d < 0.01 m, d < 0.005 m in TaskSpec.reward)
GOAL_TASKS = {
    "FingerPushGoal-v1": ("FingerPush-v1", ("x_o",), ("target",), 0.05),
    "SerialArmReachGoal-v1": ("SerialArmReach-v1", ("x", "y"), ("target_x", "target_y"), 0.01),
    "ParallelArmReachGoal-v1": ("ParallelArmReach-v1", ("x", "y"), ("target_x", "target_y"),
                                0.005),
}
REWARD_TYPES = ("sparse", "dense")


def goal_reward(achieved_goal: Any, desired_goal: Any, tolerance: float,
                reward_type: str = "sparse") -> np.ndarray:
    """The GoalEnv reward of goals in m (single or batched in the last axis): sparse, -1 while
    the distance is at least `tolerance` and 0 within it; dense, minus the distance."""
    d = np.linalg.norm(np.asarray(achieved_goal, dtype=np.float64)
                       - np.asarray(desired_goal, dtype=np.float64), axis=-1)
    if reward_type == "dense":
        return -d
    return -(d >= tolerance).astype(np.float64)


class RobosimGoalEnv(gym.Env):
    """A goal-conditioned variant (GOAL_TASKS) of a -v1 task. goal_task: its name
    ("SerialArmReachGoal-v1"); reward_type: "sparse" (default) or "dense"; the other keyword
    arguments go to the -v1 task's RobosimEnv (endpoint, params, dtype, ...)."""

    metadata = RobosimEnv.metadata

    def __init__(self, goal_task: str = "SerialArmReachGoal-v1", reward_type: str = "sparse",
                 dtype: Any = np.float32, task: Optional[str] = None, **kwargs: Any) -> None:
        if goal_task not in GOAL_TASKS:
            raise ValueError("goal_task %r: one of %s" % (goal_task, ", ".join(GOAL_TASKS)))
        if reward_type not in REWARD_TYPES:
            raise ValueError("reward_type %r: one of %s" % (reward_type, ", ".join(REWARD_TYPES)))
        base, achieved, desired, self.tolerance = GOAL_TASKS[goal_task]
        if task is not None and task != base:
            raise ValueError("%s runs %s, not %s" % (goal_task, base, task))
        self.goal_task = goal_task
        self.reward_type = reward_type
        self._dtype = space_dtype(dtype)
        self.env = RobosimEnv(task=base, dtype=np.float64, **kwargs)
        self.task = base
        self.render_mode = self.env.render_mode
        self.metadata = self.env.metadata
        obs_vars = self.env.task_spec["observation"]
        names = [v["name"] for v in obs_vars]
        missing = [n for n in achieved + desired if n not in names]
        if missing:
            self.env.close()
            raise ValueError("%s: the observation of %s has no %s" % (goal_task, base, missing))
        self._achieved = np.array([names.index(n) for n in achieved])
        self._desired = np.array([names.index(n) for n in desired])
        self._scale = np.array([unit_scale(v.get("unit")) for v in obs_vars])
        inner = self.env.observation_space
        assert isinstance(inner, gym.spaces.Box) and isinstance(self.env.action_space,
                                                                gym.spaces.Box)
        goal_low = np.minimum(inner.low[self._achieved] * self._scale[self._achieved],
                              inner.low[self._desired] * self._scale[self._desired])
        goal_high = np.maximum(inner.high[self._achieved] * self._scale[self._achieved],
                               inner.high[self._desired] * self._scale[self._desired])
        goal = gym.spaces.Box(goal_low.astype(self._dtype), goal_high.astype(self._dtype),
                              dtype=self._dtype)
        self.observation_space = gym.spaces.Dict({
            "observation": gym.spaces.Box(inner.low.astype(self._dtype),
                                          inner.high.astype(self._dtype), dtype=self._dtype),
            "achieved_goal": goal, "desired_goal": goal})
        self.action_space = gym.spaces.Box(
            self.env.action_space.low.astype(self._dtype),
            self.env.action_space.high.astype(self._dtype), dtype=self._dtype)

    # the -v1 task's world, as RobosimEnv has them (robosim.baselines reads them)
    @property
    def task_spec(self) -> dict:
        """The -v1 task's TaskSpec (GetSpec's "task")."""
        return self.env.task_spec

    @property
    def world_spec(self) -> dict:
        """The -v1 task's world's GetSpec."""
        return self.env.world_spec

    @property
    def client(self) -> Any:
        """The robosim.Client of the -v1 task's world."""
        return self.env.client

    @property
    def world_id(self) -> Optional[int]:
        """The -v1 task's world's id."""
        return self.env.world_id

    def _goal_obs(self, obs: np.ndarray) -> dict:
        metres = obs * self._scale
        return {"observation": obs.astype(self._dtype),
                "achieved_goal": metres[self._achieved].astype(self._dtype),
                "desired_goal": metres[self._desired].astype(self._dtype)}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """The reward of achieved against desired goals (m), single or batched in the last
        axis (info is not used): what step() returns for the same goals."""
        return goal_reward(achieved_goal, desired_goal, self.tolerance, self.reward_type)

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict] = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        if seed is None:  # follow this env's generator, as the -v1 env follows its own
            seed = int(self.np_random.integers(0, 2 ** 63 - 1))
        obs, info = self.env.reset(seed=seed, options=options)
        return self._goal_obs(obs), info

    def step(self, action: Any) -> tuple[dict, SupportsFloat, bool, bool, dict]:
        obs, _, terminated, truncated, info = self.env.step(action)
        o = self._goal_obs(obs)
        reward = float(self.compute_reward(o["achieved_goal"], o["desired_goal"], info))
        return o, reward, terminated, truncated, info

    def render(self) -> Optional[np.ndarray]:
        return self.env.render()

    def close(self) -> None:
        env = getattr(self, "env", None)
        if env is not None:
            env.close()
        super().close()

    def __getstate__(self) -> dict:
        return {"args": dict(self.env._init_args, goal_task=self.goal_task,
                             reward_type=self.reward_type, dtype=self._dtype)}

    def __setstate__(self, state: dict) -> None:
        args = dict(state["args"])
        args.pop("task", None)
        args.pop("dtype", None)
        RobosimGoalEnv.__init__(self, dtype=state["args"]["dtype"], **args)


def register_goal_envs() -> None:
    """Register robosim/<GoalTask> for each goal variant (idempotent); its episode limit is the
    -v1 task's."""
    for goal_task, (base, *_) in GOAL_TASKS.items():
        register_task("robosim/" + goal_task, base, entry_point="robosim.goal:RobosimGoalEnv",
                      vector_entry_point=None, goal_task=goal_task)
