"""Scripted baseline policies, one per task, for robosim-eval and as examples:

    robosim-eval --env robosim/FingerPush-v0 --policy robosim.baselines:finger_push ...
    robosim-eval --env robosim/SerialArmReach-v0 --policy robosim.baselines:auto ...

A policy maps an observation to an action. A *policy factory* (marked with @policy_factory) is
called once with the environment and returns the policy; robosim-eval knows the difference.
`auto` is a factory that picks the baseline of the environment's task."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .render import unit_scale

# a policy maps an observation to an action
Policy = Callable[[Any], Any]


def policy_factory(fn: Callable[[Any], Policy]) -> Callable[[Any], Policy]:
    """Mark fn(env) -> policy as a factory."""
    fn.robosim_policy_factory = True  # type: ignore[attr-defined]
    return fn


def _wrap(a: float) -> float:
    return math.atan2(math.sin(a), math.cos(a))


def _clip(v: float, lo: float, hi: float) -> float:
    return lo if v < lo else hi if v > hi else v


def finger_push(obs: Any) -> np.ndarray:
    """Push until the object, released, would coast to the target (kinetic friction stops a free
    object at >= 0.5 m/s^2), then pull back and let it slide to rest."""
    x_f, v_f, x_o, v_o, target, _tip = obs
    dist = target - x_o
    if dist <= 0.0 or (v_o > 0 and v_o * v_o / (2 * 0.5) >= dist - 0.01):
        return np.array([-5.0])
    return np.array([_clip(8.0 * (min(0.8, math.sqrt(dist)) - v_f), -5.0, 5.0)])


def finger_touch(obs: Any) -> np.ndarray:
    """Approach slowly (an impact kicks the object), let a sliding object stop, then press
    with the target force (below static friction the object stays put)."""
    gap, v_f, _disp, v_o, _tip, target = obs
    if gap > 1e-9:
        v = max(0.02, min(0.3, 2.0 * gap))
        return np.array([_clip(6.0 * (v - v_f) + v_f * abs(v_f), -2.0, 2.0)])
    return np.array([0.0 if abs(v_o) > 0 else target])


def _params(env: Any) -> dict:
    spec = env.unwrapped.world_spec
    (ent,) = spec["entities"].values()
    return {k: p["values"] for k, p in ent["params"].items()}


@policy_factory
def serial_arm_reach(env: Any) -> Policy:
    """Setpoints from the closed-form inverse kinematics (elbow up) of the target point."""
    p = _params(env)
    a1, a2 = p["a1"][0], p["a2"][0]

    def policy(obs: Any) -> np.ndarray:
        x, y = obs[6], obs[7]
        D = (x * x + y * y - a1 * a1 - a2 * a2) / (2 * a1 * a2)
        D = _clip(D, -1.0, 1.0)
        q2 = math.atan2(-math.sqrt(1 - D * D), D)
        q1 = math.atan2(y, x) - math.atan2(a2 * math.sin(q2), a1 + a2 * math.cos(q2))
        return np.array([_wrap(q1), _wrap(q2)])
    return policy


def _parallel_ik(p: dict) -> Callable[[float, float], np.ndarray]:
    """(x, y) -> servo angles, the parallel arm's closed-form inverse kinematics (two circle
    intersections)."""
    L0, L1, L2 = p["L0"][0], p["L1"][0], p["L2"][0]
    lo, hi = p["theta_min"], p["theta_max"]

    def ik(x: float, y: float) -> np.ndarray:
        G = math.hypot(x - L0 / 2, y)
        H = math.hypot(x + L0 / 2, y)
        ca = _clip((G * G + L0 * L0 - H * H) / (2 * G * L0), -1, 1)
        cb = _clip((H * H + L0 * L0 - G * G) / (2 * H * L0), -1, 1)
        cg = _clip((G * G + L1 * L1 - L2 * L2) / (2 * G * L1), -1, 1)
        ce = _clip((H * H + L1 * L1 - L2 * L2) / (2 * H * L1), -1, 1)
        q1 = math.pi - math.acos(cb) - math.acos(ce)
        q2 = math.pi - math.acos(ca) - math.acos(cg)
        return np.array([_clip(q1, max(lo[0], 0.0), min(hi[0], math.pi / 2)),
                         _clip(q2, max(lo[1], 0.0), min(hi[1], math.pi / 2))])
    return ik


@policy_factory
def parallel_arm_reach(env: Any) -> Policy:
    """Servo setpoints from the parallel arm's inverse kinematics."""
    ik = _parallel_ik(_params(env))
    return lambda obs: ik(obs[6], obs[7])


@policy_factory
def parallel_arm_reach_torque(env: Any) -> Policy:
    """ParallelArmReach-v1: a joint-space PD law on the servo torques towards the inverse
    kinematics of the target, tau = 0.5 (q* - q) - 0.12 q_dot (about critically damped with
    the task's J = 0.01 kg m^2), as fractions of 0.5 N*m. The observation is scaled (rates in
    10 rad/s, positions in 0.1 m: the units its TaskSpec gives)."""
    ik = _parallel_ik(_params(env))
    # the observation in radians, rad/s and metres: each value times its unit's factor
    scale = np.array([unit_scale(v["unit"]) for v in env.unwrapped.task_spec["observation"]])

    def policy(obs: Any) -> np.ndarray:
        o = np.asarray(obs, dtype=np.float64) * scale
        q_star = ik(o[6], o[7])
        tau = 0.5 * (q_star - o[0:2]) - 0.12 * o[2:4]
        return np.clip(tau / 0.5, -1.0, 1.0)
    return policy


def diff_drive_goal(obs: Any) -> np.ndarray:
    """Head for the goal, pushed sideways by the nearest obstacle when it is close: a
    potential field in the robot's observation, then a turn-and-drive wheel law."""
    _x, _y, c, s, gdx, gdy, odx, ody, clearance, bumper = obs
    dist = math.hypot(gdx, gdy)
    want_x, want_y = gdx / max(dist, 1e-9), gdy / max(dist, 1e-9)
    od = math.hypot(odx, ody)
    if od > 0 and clearance < 0.6:  # m
        push = (0.6 - clearance) / 0.3
        ax, ay = -odx / od, -ody / od  # away from the obstacle
        # slide around it: add the tangent closer to the goal direction
        tx, ty = -ay, ax
        if tx * want_x + ty * want_y < 0:
            tx, ty = -tx, -ty
        want_x += push * (0.6 * ax + tx)
        want_y += push * (0.6 * ay + ty)
    err = _wrap(math.atan2(want_y, want_x) - math.atan2(s, c))
    fwd = _clip(15.0 * dist, 1.0, 8.0) if abs(err) < 0.6 and bumper < 0.5 else 0.0
    turn = _clip(4.0 * err, -4.0, 4.0)
    return np.array([_clip(fwd + turn, -10, 10), _clip(fwd - turn, -10, 10)])


def v1_scaling(env: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How a -v1 task relates to its -v0, as GetSpec gives it: the factor of each v1
    observation to v0's units (its unit's number: "5 N" is 5, "10 rad/s" 10, "cm" 0.01), and
    v0's action bounds (low, high), from a v0 world's TaskSpec on the env's server (v1's
    actions in [-1, 1] map linearly onto them)."""
    base = env.unwrapped
    scale = np.array([unit_scale(v["unit"]) for v in base.task_spec["observation"]])
    v0 = base.task.rsplit("-v", 1)[0] + "-v0"
    world = base.client.create_world(task=v0)
    try:
        action = base.client.get_spec(world)["task"]["action"]
    finally:
        base.client.destroy_world(world)
    low = np.array([v["lower"] for v in action], dtype=np.float64)
    high = np.array([v["upper"] for v in action], dtype=np.float64)
    return scale, low, high


def _normalized(v0_policy: Any) -> Callable[[Any], Policy]:
    """A -v1 task's baseline from its v0 one (v1_scaling): the observation back to v0's units,
    v0's action mapped onto [-1, 1]."""
    @policy_factory
    def factory(env: Any) -> Policy:
        scale, low, high = v1_scaling(env)
        policy = make_policy(v0_policy, env)
        return lambda obs: np.clip(2.0 * (policy(np.asarray(obs, dtype=np.float64) * scale)
                                          - low) / (high - low) - 1.0, -1.0, 1.0)
    return factory


BASELINES = {
    "FingerPush-v0": finger_push,
    "FingerTouch-v0": finger_touch,
    "SerialArmReach-v0": serial_arm_reach,
    "ParallelArmReach-v0": parallel_arm_reach,
    "ParallelArmReach-v1": parallel_arm_reach_torque,
    "DiffDriveGoal-v0": diff_drive_goal,
    # v0's baselines on v1's scaled observations and normalized actions (v1_scaling)
    "FingerPush-v1": _normalized(finger_push),
    "FingerTouch-v1": _normalized(finger_touch),
    "SerialArmReach-v1": _normalized(serial_arm_reach),
    "DiffDriveGoal-v1": _normalized(diff_drive_goal),
}


@policy_factory
def mobile_align(env: Any) -> Policy:
    """MobileAlign-v0: the alignment specification examples/specs/dual_arm_alignment.jsonld (the
    package's copy: robosim.example_spec) loaded on the env's world does the work; the agent
    adds zero wheel speed."""
    from .specs import example_spec
    base = env.unwrapped
    base.client.load_motion_spec(base.world_id, path=example_spec("dual_arm_alignment.jsonld"))
    return lambda obs: np.zeros(2)


BASELINES["MobileAlign-v0"] = mobile_align
BASELINES["MobileAlign-v1"] = _normalized(mobile_align)


def make_policy(obj: Any, env: Any) -> Policy:
    """A policy (obs -> action) from a policy or a policy factory."""
    if getattr(obj, "robosim_policy_factory", False):
        return obj(env)
    return obj


@policy_factory
def auto(env: Any) -> Policy:
    """The baseline of env's task. A goal-conditioned env (robosim.goal) gets its -v1 task's
    baseline, fed the "observation" part of its dict observations."""
    base = env.unwrapped
    task = base.task
    if task not in BASELINES:
        raise ValueError("no baseline for task %r" % task)
    inner = getattr(base, "goal_task", None) and getattr(base, "env", None)
    if inner is None:
        return make_policy(BASELINES[task], env)
    policy = make_policy(BASELINES[task], inner)
    return lambda obs: policy(obs["observation"] if isinstance(obs, dict) else obs)
