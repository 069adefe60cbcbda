"""Simple pictures of the robots with numpy only (RGB uint8 arrays), for render_mode="rgb_array",
gymnasium.wrappers.RecordVideo and the animated GIF of `robosim plot`.

Each robot kind has a drawing: the finger and its object from the side, the two arms from the
front, the differential-drive robot from above among its obstacles. A task's target (x*, the
target point, the goal) is drawn in red."""
from typing import Any, Optional
import math

import numpy as np

WIDTH, HEIGHT = 480, 360

BACKGROUND = (248, 248, 244)
INK = (40, 40, 48)
GREY = (150, 150, 150)
BLUE = (60, 110, 200)
ORANGE = (230, 140, 40)
RED = (210, 50, 50)
GREEN = (60, 160, 80)


class Canvas:
    """An RGB image with a world-to-pixel map (x right, y up unless flip_y is False)."""

    def __init__(self, width: int = WIDTH, height: int = HEIGHT, xlim: tuple = (-1, 1),
                 ylim: Optional[tuple] = None, flip_y: bool = True) -> None:
        self.img = np.empty((height, width, 3), dtype=np.uint8)
        self.img[:] = BACKGROUND
        self.w, self.h = width, height
        x0, x1 = xlim
        if ylim is None:  # equal scale, centred on 0
            span = (x1 - x0) * height / width
            ylim = (-span / 2, span / 2)
        self.x0, self.y0 = x0, ylim[0]
        self.sx = width / (x1 - x0)
        self.sy = height / (ylim[1] - ylim[0])
        self.flip_y = flip_y
        yy, xx = np.mgrid[0:height, 0:width]
        self._xx, self._yy = xx + 0.5, yy + 0.5

    def px(self, x: float, y: float) -> tuple:
        u = (x - self.x0) * self.sx
        v = (y - self.y0) * self.sy
        return u, (self.h - v if self.flip_y else v)

    def _paint(self, mask, color):
        self.img[mask] = color

    def disk(self, x: float, y: float, r: float, color: Any, r_px_min: float = 1.5) -> None:
        u, v = self.px(x, y)
        rp = max(r * self.sx, r_px_min)
        self._paint((self._xx - u) ** 2 + (self._yy - v) ** 2 <= rp * rp, color)

    def ring(self, x: float, y: float, r: float, color: Any, width_px: float = 2.0) -> None:
        u, v = self.px(x, y)
        rp = r * self.sx
        d = np.sqrt((self._xx - u) ** 2 + (self._yy - v) ** 2)
        self._paint(np.abs(d - rp) <= width_px / 2, color)

    def rect(self, x0: float, y0: float, x1: float, y1: float, color: Any) -> None:
        u0, v0 = self.px(x0, y0)
        u1, v1 = self.px(x1, y1)
        ua, ub = sorted((u0, u1))
        va, vb = sorted((v0, v1))
        self._paint((self._xx >= ua) & (self._xx <= max(ub, ua + 1)) & (self._yy >= va) &
                    (self._yy <= max(vb, va + 1)), color)

    def line(self, x0: float, y0: float, x1: float, y1: float, color: Any,
             width_px: float = 3.0) -> None:
        u0, v0 = self.px(x0, y0)
        u1, v1 = self.px(x1, y1)
        du, dv = u1 - u0, v1 - v0
        L2 = du * du + dv * dv
        if L2 == 0:
            t = np.zeros_like(self._xx)
        else:
            t = np.clip(((self._xx - u0) * du + (self._yy - v0) * dv) / L2, 0, 1)
        d2 = (self._xx - u0 - t * du) ** 2 + (self._yy - v0 - t * dv) ** 2
        self._paint(d2 <= (width_px / 2) ** 2, color)

    def cross(self, x: float, y: float, size_px: float, color: Any, width_px: float = 2.0) -> None:
        s = size_px / self.sx
        self.line(x - s, y - s, x + s, y + s, color, width_px)
        self.line(x - s, y + s, x + s, y - s, color, width_px)


def _param(spec_ent, name, i=0, default=None):
    p = spec_ent["params"].get(name)
    if p is None or len(p["values"]) <= i:
        return default
    return p["values"][i]


def _var_index(vars_, name):
    for i, v in enumerate(vars_):
        if v["name"] == name:
            return i
    return None


def _value(spec_ent, ent_state, group, name):
    i = _var_index(spec_ent[group], name)
    arr = ent_state["state" if group == "state" else "sensors"]
    return float(arr[i]) if i is not None and i < len(arr) else float("nan")


_PREFIXED_UNITS = {"cm": 0.01, "mm": 0.001}


def unit_scale(unit: Optional[str]) -> float:
    """The factor that turns a value in `unit` into its base unit: 0.1 for "0.1 m", 5 for
    "5 N", 0.01 for "cm", 1.0 for "m", "1" or "" (a TaskSpec variable's unit, as GetSpec gives
    it)."""
    unit = unit or ""
    if unit in _PREFIXED_UNITS:
        return _PREFIXED_UNITS[unit]
    head = unit.split(" ", 1)[0]
    try:
        return float(head) if " " in unit else 1.0
    except ValueError:
        return 1.0


def task_targets(task_name: Optional[str], obs: Any, obs_vars: Optional[list] = None) -> dict:
    """What to draw as the target of a task, from its observation; obs_vars: the TaskSpec's
    observation variables, whose units ("0.1 m" in a -v1 task) scale the values to metres."""
    if obs is None or not task_name:
        return {}
    if obs_vars is not None:
        obs = [float(v) * unit_scale(d.get("unit")) for v, d in zip(obs, obs_vars)]
    if task_name.startswith("FingerPush"):
        return {"x": float(obs[4])}
    if task_name.startswith("FingerTouch"):
        return {"force": float(obs[5])}
    if "ArmReach" in task_name:
        return {"point": (float(obs[6]), float(obs[7]))}
    if task_name.startswith("DiffDriveGoal"):
        return {"point": (float(obs[0] + obs[4]), float(obs[1] + obs[5]))}
    return {}


def draw_finger(spec_ent: dict, st: dict, target: Any = None, width: int = WIDTH,
                height: int = HEIGHT, xlim: Optional[tuple] = None) -> np.ndarray:
    xf = _value(spec_ent, st, "state", "x_f")
    xo = _value(spec_ent, st, "state", "x_o")
    if xlim is None:
        hi = max(3.0, xo + 0.6, (target or {}).get("x", 0) + 0.4)
        xlim = (min(-0.6, xf - 0.6), hi)
    span_x = xlim[1] - xlim[0]
    span_y = span_x * height / width
    c = Canvas(width, height, xlim=xlim, ylim=(-0.3 * span_y, 0.7 * span_y))
    ground = 0.0
    c.rect(xlim[0], ground - 0.01 * span_x, xlim[1], ground, GREY)
    size = 0.04 * span_x
    # the finger: a bar ending at its tip x_f, the object: a block whose near face is x_o
    c.rect(xf - 0.5, ground + size * 0.35, xf, ground + size * 0.65, BLUE)
    c.rect(xf - size * 0.2, ground + size * 0.2, xf, ground + size * 0.8, BLUE)
    c.rect(xo, ground, xo + 2 * size, ground + 2 * size, ORANGE)
    if target and "x" in target:
        c.line(target["x"], ground - size, target["x"], ground + 3 * size, RED, 2)
    if target and "force" in target:
        # the target force as a red bar beside a green bar of the tip force
        tip = _value(spec_ent, st, "sensors", "tip_force")
        base, bar = xlim[0] + 0.03 * span_x, 0.015 * span_x
        scale = 4 * size  # per newton
        c.rect(base, ground + size, base + bar, ground + size + scale * target["force"], RED)
        c.rect(base + 1.5 * bar, ground + size, base + 2.5 * bar,
               ground + size + scale * max(0.0, min(tip, 2.0)), GREEN)
    return c.img


def draw_serial_arm(spec_ent: dict, st: dict, target: Any = None, width: int = WIDTH,
                    height: int = HEIGHT) -> np.ndarray:
    a1, a2 = _param(spec_ent, "a1", 0, 0.15), _param(spec_ent, "a2", 0, 0.10)
    q1 = _value(spec_ent, st, "state", "theta1")
    q2 = _value(spec_ent, st, "state", "theta2")
    reach = (a1 + a2) * 1.15
    c = Canvas(width, height, xlim=(-reach * width / height, reach * width / height),
               ylim=(-reach, reach))
    ex, ey = a1 * math.cos(q1), a1 * math.sin(q1)
    px, py = ex + a2 * math.cos(q1 + q2), ey + a2 * math.sin(q1 + q2)
    c.ring(0, 0, a1 + a2, (225, 225, 225), 1.5)
    c.line(0, 0, ex, ey, BLUE, 8)
    c.line(ex, ey, px, py, ORANGE, 6)
    c.disk(0, 0, 0.012 * reach, INK)
    c.disk(ex, ey, 0.008 * reach, INK)
    c.disk(px, py, 0.006 * reach, INK)
    if target and "point" in target:
        c.cross(target["point"][0], target["point"][1], 7, RED)
    return c.img


def draw_parallel_arm(spec_ent: dict, st: dict, target: Any = None, width: int = WIDTH,
                      height: int = HEIGHT) -> np.ndarray:
    L0 = _param(spec_ent, "L0", 0, 0.08)
    L1 = _param(spec_ent, "L1", 0, 0.05)
    L2 = _param(spec_ent, "L2", 0, 0.10)
    q1 = _value(spec_ent, st, "state", "theta1")
    q2 = _value(spec_ent, st, "state", "theta2")
    x = _value(spec_ent, st, "sensors", "x")
    y = _value(spec_ent, st, "sensors", "y")
    span = (L0 / 2 + L1 + L2) * 1.1
    # y points down in the arm's frame: draw with flip_y=False so down is down
    c = Canvas(width, height, xlim=(-span * width / height, span * width / height),
               ylim=(-0.25 * span, 1.75 * span), flip_y=False)
    A = (-L1 * math.cos(q1) - L0 / 2, L1 * math.sin(q1))
    B = (L1 * math.cos(q2) + L0 / 2, L1 * math.sin(q2))
    c.line(-L0 / 2, 0, L0 / 2, 0, INK, 6)
    c.line(-L0 / 2, 0, *A, BLUE, 7)
    c.line(L0 / 2, 0, *B, BLUE, 7)
    c.line(*A, x, y, ORANGE, 5)
    c.line(*B, x, y, ORANGE, 5)
    for p in (A, B, (x, y), (-L0 / 2, 0), (L0 / 2, 0)):
        c.disk(p[0], p[1], 0.012 * span, INK)
    if target and "point" in target:
        c.cross(target["point"][0], target["point"][1], 7, RED)
    return c.img


def draw_diff_drive(spec_ent: dict, st: dict, target: Any = None, width: int = WIDTH,
                    height: int = HEIGHT) -> np.ndarray:
    x = _value(spec_ent, st, "state", "x")
    y = _value(spec_ent, st, "state", "y")
    th = _value(spec_ent, st, "state", "theta")
    R = _param(spec_ent, "robot_radius", 0, 0.15)  # m, as everything on the wire
    obst = spec_ent["params"].get("obstacles", {"values": []})["values"]
    half = max(2.2, abs(x) + 2 * R, abs(y) + 2 * R)
    c = Canvas(width, height, xlim=(-half * width / height, half * width / height),
               ylim=(-half, half))
    for i in range(0, len(obst) - 2, 3):
        c.disk(obst[i], obst[i + 1], obst[i + 2], GREY)
    if target and "point" in target:
        # the task's goal tolerance, 0.1 m
        c.ring(target["point"][0], target["point"][1], 0.1, RED, 2)
        c.cross(target["point"][0], target["point"][1], 5, RED)
    bumper = _value(spec_ent, st, "sensors", "bumper")
    c.disk(x, y, R, RED if bumper > 0.5 else BLUE)
    c.line(x, y, x + R * math.cos(th), y + R * math.sin(th), (255, 255, 255), 3)
    return c.img


def draw_mobile_manipulator(spec_ent: dict, st: dict, target: Any = None, width: int = WIDTH,
                            height: int = HEIGHT) -> np.ndarray:
    """The base (a disk with its heading), both arms and the table edge, from above."""
    x, y, th = (_value(spec_ent, st, "state", n) for n in ("x", "y", "theta"))
    sx, sy = _param(spec_ent, "shoulder_x", 0, 0.2), _param(spec_ent, "shoulder_y", 0, 0.3)
    a1, a2 = _param(spec_ent, "a1", 0, 0.45), _param(spec_ent, "a2", 0, 0.40)
    ty = _param(spec_ent, "table_y", 0, 0.9)
    x0, x1 = _param(spec_ent, "table_x_min", 0, -2.0), _param(spec_ent, "table_x_max", 0, 2.0)
    half = 1.4
    c = Canvas(width, height, xlim=(x - half * width / height, x + half * width / height),
               ylim=(y - half + 0.5, y + half + 0.5))
    c.rect(x0, ty, x1, ty + 1.0, GREY)
    c.disk(x, y, 0.3, BLUE)
    ct, st_ = math.cos(th), math.sin(th)
    c.line(x, y, x + 0.3 * ct, y + 0.3 * st_, (255, 255, 255), 3)
    for side, sign in (("left", 1.0), ("right", -1.0)):
        q1 = _value(spec_ent, st, "state", side + "_theta1")
        q2 = _value(spec_ent, st, "state", side + "_theta2")
        pts = [(sx, sign * sy)]
        pts.append((pts[0][0] + a1 * math.cos(q1), pts[0][1] + a1 * math.sin(q1)))
        pts.append((pts[1][0] + a2 * math.cos(q1 + q2), pts[1][1] + a2 * math.sin(q1 + q2)))
        w = [(x + ct * px - st_ * py, y + st_ * px + ct * py) for px, py in pts]
        c.line(*w[0], *w[1], ORANGE, 5)
        c.line(*w[1], *w[2], ORANGE, 4)
        on = _value(spec_ent, st, "sensors", side + "_contact") > 0
        c.disk(*w[2], 0.03, RED if on else INK)
    return c.img


DRAWERS = {"finger": draw_finger, "serial_arm": draw_serial_arm,
           "parallel_arm": draw_parallel_arm, "diff_drive": draw_diff_drive,
           "mobile_manipulator": draw_mobile_manipulator}


def draw_world(spec: dict, state: dict, targets: Optional[dict] = None, width: int = WIDTH,
               height: int = HEIGHT, finger_xlim: Optional[tuple] = None) -> np.ndarray:
    """One picture of every entity of a world (side by side when there are several).
    finger_xlim fixes the finger's view (x range, m), e.g. for all frames of an animation."""
    names = list(state["entities"])
    if not names:
        img = np.empty((height, width, 3), dtype=np.uint8)
        img[:] = BACKGROUND
        return img
    w_each = max(80, width // len(names))
    panels = []
    for name in names:
        ent = state["entities"][name]
        draw = DRAWERS.get(ent["kind"])
        if draw is None:
            panel = np.empty((height, w_each, 3), dtype=np.uint8)
            panel[:] = BACKGROUND
        else:
            kw = {"xlim": finger_xlim} if ent["kind"] == "finger" and finger_xlim else {}
            panel = draw(spec["entities"][name], ent, targets, width=w_each, height=height, **kw)
        panels.append(panel)
    img = np.concatenate(panels, axis=1)
    return img
