"""Plots of finger runs like the 1D Robot article's Figure 1: finger and object positions against
time, and the tip force sensor with the applied force against time, the events (touch, bounce, slip,
...) marked at their exact times; and an animated GIF of the robots.

    states = robosim.plot.figure1_run(client)          # the article's scenario on a finger world
    states = robosim.plot.figure1_run(client, article_law=True)  # ... under its own law
    robosim.plot.plot_finger_run(states, "figure1.png")
    robosim.plot.write_gif(spec, states, "finger.gif")
"""
from typing import Any, Callable, Optional
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .render import draw_world, task_targets  # noqa: E402

EVENT_COLORS = {"touch": "tab:red", "bounce": "tab:purple", "merge": "tab:brown",
                "separate": "tab:gray", "stick": "tab:olive", "slip": "tab:cyan"}

# the article's Figure 1 story on the finger preset: push gently, coast into the object (a touch),
# push hard enough to break static friction (1 N) and move it, then let go: the finger, with the
# larger drag, falls behind
FIGURE1_SCHEDULE = ([0.0, 1.0, 1.01, 2.8, 2.81, 4.3, 4.31, 7.0],
                    [0.6, 0.6, 0.0, 0.0, 2.5, 2.5, 0.0, 0.0])
FIGURE1_PARAMS = {"finger.object_x0": 0.7}


def _progress(total, desc, unit, enabled):
    """A tqdm bar on stderr (hidden when stderr is not a terminal), or a no-op one."""
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled or None, leave=False)


def figure1_run(client: Any, seconds: float = 7.0, control_dt: float = 0.01, seed: int = 0,
                progress: bool = False, article_law: bool = False,
                seed000: bool = False) -> tuple:
    """Run the Figure 1 scenario on a new finger world (destroyed afterwards); the list of
    State dicts, one per control step, starting with the reset state. progress: a bar on a
    terminal's stderr. article_law: under the 1D Robot article's own contact law (friction_law =
    1: the resting object is a wall to a push below F_static, kinetic friction only while
    pushing), which reproduces the article's Figure 1; else robosim's Coulomb law. seed000: the
    older name of article_law, still accepted."""
    params = dict(FIGURE1_PARAMS)
    params["control_dt"] = control_dt
    if article_law or seed000:
        params["finger.friction_law"] = 1
    wid = client.create_world("finger", params=params, seed=seed)
    try:
        times, values = FIGURE1_SCHEDULE
        client.set_schedule(wid, "finger", 0, times, values)
        states = [client.get_state(wid)]
        n = int(round(seconds / control_dt))
        with _progress(n, "simulating", "step", progress) as bar:
            for _ in range(n):
                states.append(client.step(wid, steps=1))
                bar.update(1)
        return states, client.get_spec(wid)
    finally:
        client.destroy_world(wid)


def episode_run(env: Any, policy: Callable[[Any], Any], seed: int = 0,
                max_steps: Optional[int] = None) -> tuple:
    """Run one episode of a robosim environment with `policy` (obs -> action); the list of
    State dicts (the reset state first) and the episode return."""
    obs, _ = env.reset(seed=seed)
    states = [env.unwrapped.state]
    ret, n = 0.0, 0
    while True:
        obs, r, term, trunc, _ = env.step(policy(obs))
        states.append(env.unwrapped.state)
        ret += r
        n += 1
        if term or trunc or (max_steps and n >= max_steps):
            return states, ret


def _series(states, entity, group, index):
    return np.array([s["entities"][entity][group][index] for s in states])


def plot_finger_run(states: list, out: str, entity: str = "finger", title: Optional[str] = None,
                    target: Optional[float] = None) -> str:
    """Draw the Figure 1 plot of a finger run (State dicts) to `out` (PNG). Returns out."""
    t = np.array([s["time"] for s in states])
    x_f = _series(states, entity, "state", 0)
    x_o = _series(states, entity, "state", 2)
    tip = _series(states, entity, "sensors", 0)
    applied = _series(states, entity, "commands", 0)
    events = [e for s in states for e in s["events"] if e["entity"] == entity]

    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(11, 6.5), dpi=100)
    ax1.plot(t, x_f, color="tab:blue", lw=2, label="finger tip $x_f$")
    ax1.plot(t, x_o, color="tab:orange", lw=2, label="object face $x_o$")
    if target is not None:
        ax1.axhline(target, color="tab:red", ls="--", lw=1, label="target $x^*$")
    ax1.set_ylabel("position (m)")
    ax1.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax1.grid(alpha=0.3)
    ax2.step(t, tip, where="pre", color="tab:green", lw=1.8, label="tip force sensor")
    # the commands are held over each control step (zero-order hold): a step plot
    ax2.step(t, applied, where="pre", color="tab:blue", lw=1.2, alpha=0.8,
             label="applied force $F_a$")
    # impacts show as spikes (impulse / control step): keep the steady forces readable and
    # write the spikes' heights at the top instead
    steady = max(1.0, float(np.max(np.abs(applied))) * 1.6)
    ax2.set_ylim(min(-0.2, float(np.min(applied)) * 1.2), steady)
    for i in np.nonzero(tip > steady)[0]:
        ax2.annotate("%.3g N" % tip[i], (t[i], steady), xytext=(3, -12),
                     textcoords="offset points", fontsize="x-small", color="tab:green")
    ax2.set_ylabel("force (N)")
    ax2.set_xlabel("time (s)")
    ax2.grid(alpha=0.3)
    seen = set()
    for e in events:
        color = EVENT_COLORS.get(e["kind"], "k")
        label = e["kind"] if e["kind"] not in seen else None
        seen.add(e["kind"])
        for ax in (ax1, ax2):
            ax.axvline(e["time"], color=color, ls=":", lw=1.2, label=label if ax is ax2 else None)
    ax2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.suptitle(title or "1D finger and object: positions, tip force sensor and applied force")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def write_gif(spec: dict, states: list, out: str, task: Optional[str] = None, every: int = 5,
              fps: int = 20, width: int = 480, height: int = 240,
              progress: bool = False) -> str:
    """An animated GIF of the robots over the run (every `every`-th state). Returns out.
    progress: a bar of the frames drawn on a terminal's stderr."""
    from PIL import Image
    # one view for the whole run: the finger's x range over all states (and the target)
    xs = [v for s in states for e in s["entities"].values() if e["kind"] == "finger"
          for v in (e["state"][0], e["state"][2])]
    if states[0].get("task") is not None and task and task.startswith("FingerPush"):
        xs.append(states[0]["task"]["observation"][4])
    xlim = (min(xs) - 0.6, max(xs) + 0.6) if xs else None
    obs_vars = (spec.get("task") or {}).get("observation")  # their units scale the targets
    frames = []
    chosen = states[::max(1, every)] + ([states[-1]] if (len(states) - 1) % every else [])
    with _progress(len(chosen), "drawing %s" % out, "frame", progress) as bar:
        for s in chosen:
            obs = s["task"]["observation"] if s.get("task") else None
            img = draw_world(spec, s, task_targets(task, obs, obs_vars), width=width,
                             height=height, finger_xlim=xlim)
            frames.append(Image.fromarray(img))
            bar.update(1)
    frames[0].save(out, save_all=True, append_images=frames[1:], duration=int(1000 / fps),
                   loop=0)
    return out


ALIGNMENT_PRESETS = {1: "mobile_manipulator", 2: "mobile_manipulator_passive"}


def alignment_run(client: Any, spec_path: str, angle: float = 0.2, seconds: float = 30.0,
                  every: int = 5, scenario: int = 1) -> tuple:
    """The dual-arm alignment tutorial's alignment: a mobile_manipulator world started at `angle`
    (rad) from facing the table edge, the specification at spec_path loaded, run for `seconds`; the
    State dicts every `every` control steps (the first included), and the world's MotionSpecReply.
    Scenario 1: the preset mobile_manipulator (the base driven by its wheels); scenario 2:
    mobile_manipulator_passive (a passive base, moved by the arms' pushes on the edge)."""
    import math
    wid = client.create_world(ALIGNMENT_PRESETS[scenario],
                              params={"mm.theta0": [math.pi / 2 + angle]})
    try:
        client.load_motion_spec(wid, path=spec_path)
        info = client.get_motion_spec(wid)
        states = [client.step(wid, steps=1)]
        n = int(round(seconds / 0.01 / every))
        for _ in range(n):
            states.append(client.step(wid, steps=every))
        return states, info
    finally:
        client.destroy_world(wid)


def alignment_figures(states: list) -> tuple:
    """(t, heading error in degrees, left and right distances, left and right normal forces)
    of an alignment run, as arrays."""
    t = np.array([s["time"] for s in states])
    th = _series(states, "mm", "state", 2) - np.pi / 2
    ang = np.degrees(np.arctan2(np.sin(th), np.cos(th)))
    sens = np.array([s["entities"]["mm"]["sensors"] for s in states])
    return t, ang, sens[:, 7], sens[:, 15], sens[:, 2], sens[:, 10]


def plot_alignment(states: list, out: str, title: Optional[str] = None,
                   tube: tuple = (0.68, 0.72)) -> str:
    """Angle, distances (with the tube) and contact forces against time, to `out` (PNG)."""
    t, ang, dl, dr, fl, fr = alignment_figures(states)
    fig, (a1, a2, a3) = plt.subplots(3, 1, sharex=True, figsize=(10, 8), dpi=100)
    a1.plot(t, ang, color="tab:blue", lw=2, label="base heading error")
    a1.axhspan(-1, 1, color="tab:green", alpha=0.15, label="within 1 degree")
    a1.set_ylabel("angle (deg)")
    a2.plot(t, dl, color="tab:orange", lw=2, label="left shoulder to end effector")
    a2.plot(t, dr, color="tab:purple", lw=2, label="right shoulder to end effector")
    a2.axhspan(*tube, color="tab:green", alpha=0.15, label="tube [%.2f, %.2f] m" % tube)
    a2.set_ylabel("distance (m)")
    a3.plot(t, fl, color="tab:orange", lw=1.5, label="left normal force")
    a3.plot(t, fr, color="tab:purple", lw=1.5, label="right normal force")
    a3.set_ylabel("force (N)")
    a3.set_xlabel("time (s)")
    for ax in (a1, a2, a3):
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
    fig.suptitle(title or "Mobile manipulator aligning to the table edge "
                          "(the dual-arm alignment tutorial)")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out
