"""robosim's three contact formulations next to MuJoCo, Drake and PyBullet on the same bodies.

    .venv/bin/python bench/compare_peers.py [--quick] [--out DIR] [--only SCENARIO,...]

Scenarios (docs/comparison.md describes each model, per simulator, and every difference):
  brick_flat    a 1 kg, 0.2 x 0.1 m brick (0.1 m deep in 3D) dropped flat from 0.45 m, e = 0.5,
                mu = 0.5: closed forms t_1 = sqrt(2 H / g), rebound apexes h_k = e^(2k) H,
                rest at t_inf = t_1 (1 + 2 e / (1 - e)), flat at its half height, x unchanged;
  brick_tilted  the same brick tilted 0.3 rad, its lowest corner 0.45 m up, vx0 = 0.5 m/s:
                first impact at sqrt(2 H / g) (closed form), rest pose against the rigid-body
                model's (Poisson impact with Stronge's bound, Coulomb friction) at tolerance
                1e-12 (robosim hybrid, its self-convergence printed);
  arm_stop      the serial two-link arm swinging freely from the horizontal and stopping at
                joint 1's lower stop (-1.0 rad, inelastic): against an independent reference
                (scipy DOP853 at rtol 1e-12 on the closed-form Lagrange equations, with the stop
                found by its event and the plastic impulse applied in closed form);
  finger_push   the 1D finger pushed by 0.5 N into a resting 1 kg object (plastic impact); the
                object slips under kinetic friction 1 N and sticks (0.5 N < static 1 N): closed
                forms for the touch time, the stick time and the rest position;
  dd_obstacle,  the diff-drive robot driving into a disk / into the wedge between two: closed
  dd_wedge      forms for the contact time and the blocked position; robosim only (its robot is
                kinematic; no peer has one).
Each simulator runs at several time steps (peers, robosim's time-stepping) or tolerances
(robosim's hybrid and compliant). Per run: the scenario's error (the work-precision diagram's
y), the deepest penetration, the largest energy gained above the start (nothing drives these
systems: any gain is created by the method), CPU seconds per simulated second (process CPU time
of the stepping alone, the least over repetitions; robosim in-process through its C core,
bench_core_compare; peers through their Python bindings, MuJoCo's mj_step with nstep so the loop
runs in C, Drake's Simulator.AdvanceTo (SAP, and TAMSI on the bricks and the arm), PyBullet's
stepSimulation per step).

Writes DIR/comparison.csv, one DIR/comparison_<scenario>.png each (work precision, event time,
penetration, energy
created against CPU) and prints the table. A peer that does not import is reported and skipped
(pip install -r bench/requirements-compare.txt); the run still exits 0.
robosim's binary: $ROBOSIM_BIN_DIR/bench_core_compare, else build/release/bin (scripts/build
release bench_core_compare).
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

G = 9.81
ROOT = Path(__file__).resolve().parent.parent
BIN = (Path(os.environ.get("ROBOSIM_BIN_DIR", ROOT / "build" / "release" / "bin"))
       / "bench_core_compare")

# ---- the bodies, shared by every simulator ------------------------------------------------
BRICK = dict(m=1.0, w=0.2, h=0.1, d=0.1, e=0.5, mu=0.5, k=1e6)


def restitution_zeta(e):
    """Damping ratio of a linear spring-damper whose free response gives restitution e
    (displacement-based: e = exp(-zeta pi / sqrt(1 - zeta^2)))."""
    if e <= 0:
        return 1.0
    le = math.log(e)
    return -le / math.sqrt(math.pi ** 2 + le * le)


def brick_init(scn):
    b = BRICK
    if scn == "brick_flat":
        th, vx = 0.0, 0.0
    else:
        th, vx = 0.3, 0.5
    low = b["w"] / 2 * abs(math.sin(th)) + b["h"] / 2 * abs(math.cos(th))
    return dict(x=0.0, y=0.45 + low, th=th, vx=vx, vy=0.0, w=0.0)


def brick_t_end(scn):
    return 1.5 if scn == "brick_flat" else 2.5


def cpu_timed(fn, budget=0.2, reps=5):
    """Least CPU seconds of fn() over up to `reps` calls within about `budget` s."""
    best, spent, n = math.inf, 0.0, 0
    while n < reps and (n == 0 or spent < budget):
        c0 = time.process_time()
        fn()
        c = time.process_time() - c0
        best, spent, n = min(best, c), spent + c, n + 1
    return best


class Traj:
    """A planar trajectory: t and columns by name; first contact time; CPU per sim second."""

    def __init__(self, t, cols, t_contact, cpu, note=""):
        self.t = np.asarray(t)
        self.c = {k: np.asarray(v) for k, v in cols.items()}
        self.t_contact = t_contact
        self.cpu = cpu
        self.note = note


# ---- robosim -----------------------------------------------------------------------------
def robosim_run(preset, t_end, params, commands=None):
    """One robosim run: its trajectory at the 10 ms control steps, its events and its CPU time
    (the same computation, timed), and the trajectory of a second run sampled at 0.1 ms (at the
    time step when longer: control steps of 0.1 ms stop the integrator more often, so that run
    is more accurate than the timed one; it is used for the penetration only, which a compliant
    contact reaches and leaves within a millisecond)."""
    base = [str(BIN), preset, repr(t_end)] + [f"{k}={v}" for k, v in params.items()]
    if commands:
        base += [f"u:{commands[0]}={','.join(map(repr, commands[1]))}"]
    h = params.get(next((k for k in params if k.endswith(".ts_step")), ""), 0.0)
    runs = []
    for extra in ([], [f"sample={max(1e-4, h)!r}", "reps=2"]):
        out = subprocess.run(base + extra, capture_output=True, text=True)
        xs, evs, cpu, fail = [], [], math.nan, ""
        for line in out.stdout.splitlines():
            f = line.split(",")
            if f[0] == "x":
                xs.append([float(v) for v in f[1:]])
            elif f[0] == "ev":
                evs.append((float(f[1]), f[3]))
            elif f[0] == "cpu":
                cpu = float(f[1])
            elif f[0] == "fail":
                fail = f[2]
        runs.append((np.array(xs), evs, cpu, fail or out.stderr.strip()))
    (xs, evs, cpu, fail), fine = runs[0], runs[1][0]
    return xs, evs, cpu, fail, fine


def with_fine(tr, make, fine):
    """tr, with tr.fine: the finely sampled run's trajectory made by make(states)."""
    tr.fine = make(fine) if len(fine) else None
    return tr


def runs_of(tr):
    """The trajectories to take a penetration from: the run itself and its fine sampling."""
    return [tr] + ([tr.fine] if getattr(tr, "fine", None) is not None else [])


FORMULATIONS = {"hybrid": 0, "time_stepping": 1, "compliant": 2}


def robosim_brick(scn, form, setting):
    s = brick_init(scn)
    b = BRICK
    p = {"brick.contact_model": FORMULATIONS[form], ".control_dt": 0.01,
         "brick.y0": s["y"], "brick.theta0": s["th"], "brick.vx0": s["vx"],
         "brick.restitution": b["e"], "brick.ground_restitution": b["e"],
         "brick.friction": b["mu"], "brick.ground_friction": b["mu"]}
    if form == "time_stepping":
        p["brick.ts_step"] = setting
    else:
        p[".rtol"], p[".atol"] = setting, setting * 1e-2
    if form == "compliant":
        # no padding: the layer is the ground itself, as in the penalty peers
        p["brick.padding"] = 0.0
        p["brick.stiffness"] = b["k"]
        p["brick.ground_stiffness"] = 1e9  # the served maximum (docs/physics-edges.md)
    T = brick_t_end(scn)
    xs, evs, cpu, fail, fine = robosim_run("brick_drop", T, p)
    x0 = [s["x"], s["y"], s["th"], s["vx"], s["vy"], s["w"]]

    def make(xs, tc=math.nan, cpu=math.nan, fail=""):
        t = np.concatenate([[0.0], xs[:, 0]]) if len(xs) else np.array([0.0])
        st = np.vstack([x0, xs[:, 1:7]]) if len(xs) else np.array([x0])
        cols = dict(x=st[:, 0], y=st[:, 1], th=st[:, 2], vx=st[:, 3], vy=st[:, 4], w=st[:, 5])
        return Traj(t, cols, tc, cpu, fail)

    tc = next((te for te, k in evs if k in ("impact", "touch")), math.nan)
    return with_fine(make(xs, tc, cpu / T, fail), make, fine)


# ---- the peers: import what is installed -------------------------------------------------
def have(mod):
    try:
        __import__(mod)
        return True
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        print(f"[compare] {mod} not available ({exc.__class__.__name__}: {exc}); skipped. "
              "pip install -r bench/requirements-compare.txt", file=sys.stderr)
        return False


def planar_from_quat(pos, quat_wxyz, lin, ang):
    """x, z, theta (rotation about -y: counter-clockwise in the x-z plane) and rates."""
    w, qx, qy, qz = quat_wxyz
    # body x axis in the world: first column of R
    r00 = 1 - 2 * (qy * qy + qz * qz)
    r20 = 2 * (qx * qz - w * qy)
    return pos[0], pos[2], math.atan2(r20, r00), lin[0], lin[2], -ang[1]


# MuJoCo -------------------------------------------------------------------------------------
def mujoco_brick(scn, dt, integrator="Euler"):
    import mujoco

    b, s = BRICK, brick_init(scn)
    zeta = restitution_zeta(b["e"])
    # the stiffest contact MuJoCo integrates stably: its natural time scale tc * zeta at twice the
    # step (MuJoCo's refsafe floor, tc >= 2 h, assumes zeta = 1; at tc = 2 h, zeta = 0.22 the
    # brick's drop diverges)
    tc = 2 * dt / zeta
    xml = f"""<mujoco><option timestep='{dt}' gravity='0 0 -{G}' integrator='{integrator}'
      cone='pyramidal'/>
      <default><geom solref='{tc} {zeta}' solimp='0.99 0.99 0.001' condim='3'/></default>
      <worldbody><geom name='floor' type='plane' size='0 0 1' friction='{b['mu']} 0 0'/>
      <body name='brick' pos='{s['x']} 0 {s['y']}' euler='0 {-s['th']} 0'><freejoint/>
      <geom type='box' size='{b['w']/2} {b['d']/2} {b['h']/2}' mass='{b['m']}'
      friction='{b['mu']} 0 0'/></body></worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    T = brick_t_end(scn)
    n = int(round(T / dt))

    def reset():
        mujoco.mj_resetData(model, data)
        data.qvel[0], data.qvel[2], data.qvel[4] = s["vx"], s["vy"], -s["w"]

    reset()
    rows, t_contact = [], math.nan
    rows.append(planar_from_quat(data.qpos[:3], data.qpos[3:7], data.qvel[:3], data.qvel[3:6]))
    for k in range(n):
        mujoco.mj_step(model, data)
        if math.isnan(t_contact) and data.ncon > 0:
            t_contact = data.time
        rows.append(planar_from_quat(data.qpos[:3], data.qpos[3:7], data.qvel[:3],
                                     data.qvel[3:6]))

    def timed():
        reset()
        mujoco.mj_step(model, data, nstep=n)

    cpu = cpu_timed(timed)
    return brick_traj(rows, dt, t_contact, cpu / T)


def brick_traj(rows, dt, t_contact, cpu, note=""):
    a = np.array(rows)
    t = dt * np.arange(len(a))
    return Traj(t, dict(x=a[:, 0], y=a[:, 1], th=a[:, 2], vx=a[:, 3], vy=a[:, 4], w=a[:, 5]),
                t_contact, cpu, note)


# PyBullet -----------------------------------------------------------------------------------
def pybullet_brick(scn, dt):
    import pybullet as p

    b, s = BRICK, brick_init(scn)
    cid = p.connect(p.DIRECT)
    try:
        T = brick_t_end(scn)
        n = int(round(T / dt))

        def build():
            p.resetSimulation(physicsClientId=cid)
            p.setGravity(0, 0, -G, physicsClientId=cid)
            p.setPhysicsEngineParameter(fixedTimeStep=dt, numSubSteps=0,
                                        restitutionVelocityThreshold=1e-3,
                                        physicsClientId=cid)
            plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE,
                                                                physicsClientId=cid),
                                      physicsClientId=cid)
            box = p.createMultiBody(
                b["m"], p.createCollisionShape(p.GEOM_BOX,
                                               halfExtents=[b["w"] / 2, b["d"] / 2, b["h"] / 2],
                                               physicsClientId=cid),
                basePosition=[s["x"], 0, s["y"]],
                baseOrientation=p.getQuaternionFromEuler([0, -s["th"], 0]), physicsClientId=cid)
            # Bullet multiplies the two bodies' coefficients: the plane's are 1
            p.changeDynamics(plane, -1, restitution=1.0, lateralFriction=1.0,
                             physicsClientId=cid)
            p.changeDynamics(box, -1, restitution=b["e"], lateralFriction=b["mu"],
                             linearDamping=0.0, angularDamping=0.0, rollingFriction=0.0,
                             spinningFriction=0.0, physicsClientId=cid)
            p.resetBaseVelocity(box, [s["vx"], 0, s["vy"]], [0, -s["w"], 0], physicsClientId=cid)
            return box

        def state(box):
            pos, q = p.getBasePositionAndOrientation(box, physicsClientId=cid)
            lin, ang = p.getBaseVelocity(box, physicsClientId=cid)
            return planar_from_quat(pos, (q[3], q[0], q[1], q[2]), lin, ang)

        box = build()
        rows, t_contact = [state(box)], math.nan
        for k in range(n):
            p.stepSimulation(physicsClientId=cid)
            if math.isnan(t_contact) and p.getContactPoints(bodyA=box, physicsClientId=cid):
                t_contact = (k + 1) * dt
            rows.append(state(box))

        def timed():
            build()
            for _ in range(n):
                p.stepSimulation(physicsClientId=cid)

        cpu = cpu_timed(timed)
    finally:
        p.disconnect(cid)
    return brick_traj(rows, dt, t_contact, cpu / T)


# Drake ----------------------------------------------------------------------------------------
def hc_dissipation(e, v):
    """Hunt-Crossley dissipation d (s/m) for which a linear-stiffness contact
    F = k x (1 + d x'), clipped at 0, returns restitution e at approach speed v. Scaled, the
    rebound depends on d v only: x'' = -x (1 + c x'), x(0) = 0, x'(0) = 1, c = d v; bisection."""
    from scipy.integrate import solve_ivp

    def rebound(c):
        def f(t, y):
            return [y[1], -y[0] * max(0.0, 1 + c * y[1])]

        def out(t, y):
            return y[0]

        out.terminal, out.direction = True, -1
        sol = solve_ivp(f, (0, 50), [0.0, 1.0], events=out, rtol=1e-10, atol=1e-12,
                        first_step=1e-6)
        return -sol.y[1, -1]

    lo, hi = 0.0, 50.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rebound(mid) > e else (lo, mid)
    return 0.5 * (lo + hi) / v


def drake_brick(scn, dt, approximation="sap"):
    from pydrake.geometry import AddContactMaterial, HalfSpace, ProximityProperties, Sphere
    from pydrake.math import RigidTransform, RotationMatrix
    from pydrake.multibody.math import SpatialVelocity
    from pydrake.multibody.plant import (AddMultibodyPlant, CoulombFriction,
                                         MultibodyPlantConfig)
    from pydrake.multibody.tree import SpatialInertia
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder

    b, s = BRICK, brick_init(scn)
    T = brick_t_end(scn)
    n = int(round(T / dt))
    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlant(MultibodyPlantConfig(time_step=dt,
                                                      discrete_contact_approximation=approximation,
                                                      contact_model="point"), builder)
    body = plant.AddRigidBody("brick", SpatialInertia.SolidBoxWithMass(b["m"], b["w"], b["d"],
                                                                       b["h"]))
    # point contact at the 8 corners (tiny spheres): a box against a half space gives Drake's
    # point contact one point only. Kelvin-Voigt: k per corner, SAP's relaxation time for the
    # damping ratio of e with the flat landing's 4 corners sharing the mass.
    zeta = restitution_zeta(b["e"])
    tau = 2 * zeta / math.sqrt(4 * b["k"] / b["m"])
    r = 1e-4

    # TAMSI: Hunt-Crossley dissipation d, set for e at this drop's impact speed (its
    # restitution depends on the speed: e(d v))
    d_hc = hc_dissipation(b["e"], math.sqrt(2 * G * 0.45))

    def props(k, relax):
        pp = ProximityProperties()
        AddContactMaterial(dissipation=d_hc if approximation == "tamsi" else 0.0,
                           point_stiffness=k, friction=CoulombFriction(b["mu"], b["mu"]),
                           properties=pp)
        if approximation != "tamsi":
            pp.AddProperty("material", "relaxation_time", relax)
        return pp

    for i, (sx, sy, sz) in enumerate([(a, c, z) for a in (-1, 1) for c in (-1, 1)
                                      for z in (-1, 1)]):
        p = [sx * b["w"] / 2, sy * b["d"] / 2, sz * (b["h"] / 2 - r)]
        plant.RegisterCollisionGeometry(body, RigidTransform(p), Sphere(r), f"c{i}",
                                        props(b["k"], tau))
    # Drake adds the two geometries' relaxation times: the ground's is 0
    plant.RegisterCollisionGeometry(plant.world_body(), RigidTransform(), HalfSpace(), "ground",
                                    props(1e12, 0.0))
    plant.Finalize()
    diagram = builder.Build()
    sim = Simulator(diagram)
    ctx = sim.get_mutable_context()
    pctx = plant.GetMyMutableContextFromRoot(ctx)

    def reset():
        ctx.SetTime(0.0)
        plant.SetFreeBodyPose(pctx, body, RigidTransform(RotationMatrix.MakeYRotation(-s["th"]),
                                                         [s["x"], 0, s["y"]]))
        plant.SetFreeBodySpatialVelocity(pctx, body, SpatialVelocity([0, -s["w"], 0],
                                                                     [s["vx"], 0, s["vy"]]))
        sim.Initialize()

    def state():
        q = plant.GetPositions(pctx)  # qw qx qy qz x y z
        v = plant.GetVelocities(pctx)  # wx wy wz vx vy vz (world)
        return planar_from_quat(q[4:7], q[0:4], v[3:6], v[0:3])

    reset()
    port = plant.get_contact_results_output_port()
    rows, t_contact = [state()], math.nan
    for k in range(n):
        sim.AdvanceTo((k + 1) * dt)
        if math.isnan(t_contact) and port.Eval(pctx).num_point_pair_contacts() > 0:
            t_contact = (k + 1) * dt
        rows.append(state())

    def timed():
        reset()
        sim.AdvanceTo(n * dt)

    cpu = cpu_timed(timed)
    return brick_traj(rows, dt, t_contact, cpu / T)


# ---- brick metrics ------------------------------------------------------------------------
def lowest(tr):
    b = BRICK
    return tr.c["y"] - (b["w"] / 2 * np.abs(np.sin(tr.c["th"])) +
                        b["h"] / 2 * np.abs(np.cos(tr.c["th"])))


def energy_brick(tr):
    b = BRICK
    inertia = b["m"] * (b["w"] ** 2 + b["h"] ** 2) / 12
    return (0.5 * b["m"] * (tr.c["vx"] ** 2 + tr.c["vy"] ** 2) + 0.5 * inertia * tr.c["w"] ** 2
            + b["m"] * G * tr.c["y"])


def apexes(t, y, after, floor=1e-3):
    """The local maxima of y after time `after` higher than `floor`, each refined by the
    parabola through it and its two neighbours (exact for a ballistic flight)."""
    out = []
    for i in range(1, len(y) - 1):
        if t[i] > after and y[i] >= y[i - 1] and y[i] > y[i + 1] and y[i] > floor:
            y0, y1, y2 = y[i - 1], y[i], y[i + 1]
            den = y0 - 2 * y1 + y2
            out.append(y1 - (y2 - y0) ** 2 / (8 * den) if den < 0 else y1)
    return out


def brick_metrics(scn, tr):
    b = BRICK
    low = lowest(tr)
    E = energy_brick(tr)
    H = 0.45
    t1 = math.sqrt(2 * H / G)
    m = dict(penetration=max(0.0, max(-float(lowest(r).min()) for r in runs_of(tr))),
             energy_gain=max(0.0, float((E - E[0]).max())),
             impact_err=abs(tr.t_contact - t1) if math.isfinite(tr.t_contact) else math.nan)
    if scn == "brick_flat":
        aps = apexes(tr.t, low, t1)
        exact = [b["e"] ** 2 * H, b["e"] ** 4 * H]
        errs = [abs(a - h) / h for a, h in zip(aps, exact)]
        errs += [1.0] * (2 - len(errs))  # a missing rebound: 100 %
        m["error"] = max(errs)
        m["h1"] = aps[0] if aps else math.nan
        m["rest_err"] = float(abs(tr.c["y"][-1] - b["h"] / 2) + abs(tr.c["x"][-1]) +
                              b["w"] / 2 * abs(math.sin(tr.c["th"][-1])))
    else:
        m["x_end"], m["th_end"], m["y_end"] = (float(tr.c["x"][-1]), float(tr.c["th"][-1]),
                                               float(tr.c["y"][-1]))
    return m


# ---- the scenarios: who runs at which settings --------------------------------------------
def settings(quick):
    tol = [1e-4, 1e-6, 1e-8, 1e-10] if not quick else [1e-4, 1e-8]
    steps = [2e-3, 1e-3, 5e-4, 2e-4, 1e-4] if not quick else [1e-3, 2e-4]
    ts = [1e-3, 3e-4, 1e-4, 3e-5, 1e-5] if not quick else [1e-3, 1e-4]
    return tol, steps, ts


def brick_runs(scn, quick, peers):
    tol, steps, ts = settings(quick)
    runs = [("robosim hybrid", "rtol", v, lambda v=v: robosim_brick(scn, "hybrid", v))
            for v in tol]
    runs += [("robosim time_stepping", "h", v, lambda v=v: robosim_brick(scn, "time_stepping", v))
             for v in ts]
    runs += [("robosim compliant", "rtol", v, lambda v=v: robosim_brick(scn, "compliant", v))
             for v in tol[:3]]
    if "mujoco" in peers:
        runs += [("MuJoCo", "h", v, lambda v=v: mujoco_brick(scn, v)) for v in steps]
    if "pybullet" in peers:
        runs += [("PyBullet", "h", v, lambda v=v: pybullet_brick(scn, v)) for v in steps]
    if "pydrake" in peers:
        runs += [("Drake SAP", "h", v, lambda v=v: drake_brick(scn, v)) for v in steps]
        runs += [("Drake TAMSI", "h", v, lambda v=v: drake_brick(scn, v, "tamsi"))
                 for v in steps]
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two settings per simulator")
    ap.add_argument("--out", default=str(ROOT / "build" / "compare"), help="folder for CSV, PNGs")
    ap.add_argument("--only", default="", help="comma-separated scenarios")
    args = ap.parse_args()
    if not BIN.exists():
        print(f"{BIN} not found: run scripts/build release bench_core_compare", file=sys.stderr)
        return 1
    peers = [m for m in ("mujoco", "pybullet", "pydrake") if have(m)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scenarios = [s for s in SCENARIOS if not args.only or s in args.only.split(",")]
    results = []
    for scn in scenarios:
        runs = SCENARIOS[scn](scn, args.quick, peers)
        ref = REFERENCES.get(scn, lambda: None)()
        for sim, kind, val, fn in runs:
            try:
                tr = fn()
                m = METRICS[scn](scn, tr, ref)
                note = tr.note
            except Exception as exc:  # noqa: BLE001 - a failed run is a row, not a crash
                m, note = dict(error=math.nan), f"{exc.__class__.__name__}: {exc}"
                tr = None
            row = dict(scenario=scn, simulator=sim, setting=f"{kind}={val:g}",
                       cpu_per_s=tr.cpu if tr else math.nan, note=note, **m)
            results.append(row)
            print(f"{scn:13s} {sim:22s} {row['setting']:11s} err {row.get('error', math.nan):10.3g}"
                  f"  pen {row.get('penetration', math.nan):9.3g}"
                  f"  dE+ {row.get('energy_gain', math.nan):9.3g}"
                  f"  cpu/s {row['cpu_per_s']:9.3g} {note[:60]}", flush=True)
    keys = sorted({k for r in results for k in r}, key=lambda k: (k not in (
        "scenario", "simulator", "setting", "error", "penetration", "energy_gain", "cpu_per_s"), k))
    with (out / "comparison.csv").open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=keys)
        wr.writeheader()
        wr.writerows(results)
    plot(results, out)
    table(results)
    print(f"[compare] {out / 'comparison.csv'} and comparison_SCENARIO.png in {out}")
    return 0


def plot(results, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"robosim hybrid": ("tab:red", "o-"), "robosim time_stepping": ("tab:orange", "s-"),
              "robosim compliant": ("tab:pink", "^-"), "MuJoCo": ("tab:blue", "D--"),
              "PyBullet": ("tab:green", "v--"), "Drake SAP": ("tab:purple", "P--"),
              "Drake TAMSI": ("tab:brown", "X:")}
    for scn in dict.fromkeys(r["scenario"] for r in results):
        rows = [r for r in results if r["scenario"] == scn]
        fig, axes = plt.subplots(2, 2, figsize=(12, 9))
        axes = [axes[0][0], axes[0][1], axes[1][0], axes[1][1]]
        for sim in dict.fromkeys(r["simulator"] for r in rows):
            rr = [r for r in rows if r["simulator"] == sim and math.isfinite(r["cpu_per_s"])]
            color, style = styles.get(sim, ("k", "x-"))
            for ax, key in zip(axes, ("error", EVENT_KEY[scn], "penetration", "energy_gain")):
                pts = sorted((r["cpu_per_s"], max(r.get(key, math.nan), 1e-16)) for r in rr
                             if math.isfinite(r.get(key, math.nan)))
                if pts:
                    ax.plot(*zip(*pts), style, color=color, label=sim)
        pen_label = ("deepest: joint 1 beyond its stop (rad)" if scn == "arm_stop" else
                     "deepest penetration (m)")
        for ax, lab in zip(axes, (ERROR_LABEL[scn], EVENT_LABEL[scn], pen_label,
                                  "energy gained above the start (J)")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("CPU s per simulated s")
            ax.set_ylabel(lab)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].legend(fontsize=8)
        axes[0].set_title(f"{scn}: work-precision (lower left is better)")
        axes[1].set_title("event time error")
        axes[2].set_title("penetration (1e-16: none)")
        axes[3].set_title("energy created (1e-16: none)" if not scn.startswith("dd_") else
                          "energy: none (a kinematic robot)")
        fig.tight_layout()
        fig.savefig(out / f"comparison_{scn}.png", dpi=70)
        plt.close(fig)


def dominates(a, b):
    """Is curve a below curve b: at every CPU where both have points, a's error (interpolated
    in log-log, the lower envelope) is at or below b's? Returns 'below', 'above', 'crossing' or
    'disjoint' (no CPU overlap: then the least error of each decides, reported as such)."""
    def env(rows):
        pts = sorted((r["cpu_per_s"], r["error"]) for r in rows
                     if math.isfinite(r["cpu_per_s"]) and math.isfinite(r["error"]))
        best, outp = math.inf, []
        for c, e in pts:  # lower envelope: the best error reached with at most this CPU
            best = min(best, max(e, 1e-16))
            outp.append((c, best))
        return outp

    ea, eb = env(a), env(b)
    if not ea or not eb:
        return "n/a"

    def at(env_, c):
        if c < env_[0][0]:
            return math.inf  # cannot reach that CPU: no answer yet
        return min(e for cc, e in env_ if cc <= c)

    cs = sorted({c for c, _ in ea + eb})
    sign = set()
    for c in cs:
        if c < max(ea[0][0], eb[0][0]):
            continue
        da, db = at(ea, c), at(eb, c)
        if da < db * 0.999:
            sign.add("below")
        elif db < da * 0.999:
            sign.add("above")
    if not sign:
        return "equal"
    if len(sign) == 1:
        return sign.pop()
    return "crossing"


def table(results):
    """Two tables: who is below whom (each robosim formulation's work-precision curve against
    each peer's) and, per simulator, its least error with the CPU it took, its deepest
    penetration and its largest energy gain over all its runs."""
    short = {"robosim hybrid": "hybrid", "robosim time_stepping": "time-stepping",
             "robosim compliant": "compliant"}
    print("\n| scenario | vs MuJoCo | vs PyBullet | vs Drake SAP | vs Drake TAMSI |")
    print("|---|---|---|---|---|")
    for scn in dict.fromkeys(r["scenario"] for r in results):
        rows = [r for r in results if r["scenario"] == scn]
        cells = []
        for peer in ("MuJoCo", "PyBullet", "Drake SAP", "Drake TAMSI"):
            pr = [r for r in rows if r["simulator"] == peer]
            if not pr:
                cells.append("not run")
                continue
            rel = {short[f]: dominates([r for r in rows if r["simulator"] == f], pr)
                   for f in short}
            cells.append(", ".join(f"{f} {v}" for f, v in rel.items() if v != "n/a"))
        print(f"| {scn} | " + " | ".join(cells) + " |")
    print("\n(a curve 'below' a peer's: at every CPU per simulated second where the peer has a "
          "run (or robosim has, from where both have one), robosim's best error with at most that "
          "CPU is lower; 'crossing': lower at some, higher at others)")
    print("\n| scenario | simulator | least error | at CPU s/s | deepest penetration (m) | "
          "largest energy gain (J) | runs |")
    print("|---|---|---|---|---|---|---|")
    for scn in dict.fromkeys(r["scenario"] for r in results):
        rows = [r for r in results if r["scenario"] == scn]
        for sim in dict.fromkeys(r["simulator"] for r in rows):
            rr = [r for r in rows if r["simulator"] == sim]
            ok = [r for r in rr if math.isfinite(r.get("error", math.nan))]
            if not ok:
                print(f"| {scn} | {sim} | failed | | | | {len(rr)} |")
                continue
            best = min(ok, key=lambda r: r["error"])
            pen = max(r.get("penetration", 0.0) for r in ok)
            gain = max(r.get("energy_gain", 0.0) for r in ok)
            line = (f"| {scn} | {sim} | {best['error']:.3g} ({best['setting']}) | "
                    f"{best['cpu_per_s']:.3g} | {pen:.3g} | {gain:.3g} | {len(ok)}/{len(rr)} |")
            print(line.replace("| nan |", "| n/a |"))


# ---- brick_tilted: the rest pose against the rigid-body model at tolerance 1e-12 ----------
def brick_tilted_reference():
    ref = robosim_brick("brick_tilted", "hybrid", 1e-12)
    chk = robosim_brick("brick_tilted", "hybrid", 1e-10)
    pose = (ref.c["x"][-1], ref.c["y"][-1], ref.c["th"][-1])
    diff = abs(chk.c["x"][-1] - pose[0]) + abs(chk.c["th"][-1] - pose[2])
    print(f"[compare] brick_tilted reference (robosim hybrid, rtol 1e-12): "
          f"rest x = {pose[0]:.9f} m,"
          f" y = {pose[1]:.9f} m, theta = {pose[2]:.3g} rad; at rtol 1e-10 it differs by "
          f"{diff:.2g}")
    return pose


def brick_tilted_metrics(scn, tr, ref):
    m = brick_metrics(scn, tr)
    b = BRICK
    R = math.hypot(b["w"], b["h"]) / 2
    xr, yr, thr = ref
    # the rest pose: the centre's distance plus the corners' displacement by the angle
    m["error"] = math.hypot(m["x_end"] - xr, m["y_end"] - yr) + R * abs(m["th_end"] - thr)
    return m


# ---- arm_stop: the serial two-link arm's free swing onto joint 1's stop ----------------------
ARM = dict(a1=0.15, a2=0.10, m1=0.2, m2=0.1, q_min=-1.0, T=1.0)


def arm_consts():
    a = ARM
    lc1, lc2 = a["a1"] / 2, a["a2"] / 2
    I1, I2 = a["m1"] * a["a1"] ** 2 / 12, a["m2"] * a["a2"] ** 2 / 12
    return a, lc1, lc2, I1, I2


def arm_dyn(q1, q2, d1, d2):
    """M, and the bias b = C qd + G, of the closed-form Lagrange equations (serial_arm.c's)."""
    a, lc1, lc2, I1, I2 = arm_consts()
    c2, h = np.cos(q2), a["m2"] * a["a1"] * lc2 * np.sin(q2)
    M11 = (I1 + I2 + a["m1"] * lc1 ** 2
           + a["m2"] * (a["a1"] ** 2 + lc2 ** 2 + 2 * a["a1"] * lc2 * c2))
    M12 = I2 + a["m2"] * (lc2 ** 2 + a["a1"] * lc2 * c2)
    M22 = I2 + a["m2"] * lc2 ** 2
    g1 = (a["m1"] * lc1 + a["m2"] * a["a1"]) * G * np.cos(q1) + a["m2"] * lc2 * G * np.cos(q1 + q2)
    g2 = a["m2"] * lc2 * G * np.cos(q1 + q2)
    b1 = -h * d2 * (2 * d1 + d2) + g1
    b2 = h * d1 * d1 + g2
    return (M11, M12, M22), (b1, b2)


def arm_energy(q1, q2, d1, d2):
    a, lc1, lc2, _, _ = arm_consts()
    (M11, M12, M22), _ = arm_dyn(q1, q2, d1, d2)
    T = 0.5 * (M11 * d1 * d1 + 2 * M12 * d1 * d2 + M22 * d2 * d2)
    V = G * (a["m1"] * lc1 * np.sin(q1) + a["m2"] * (a["a1"] * np.sin(q1) + lc2 * np.sin(q1 + q2)))
    return T + V


def arm_reference():
    """The hybrid reference: free flow; at q1 = q_min closing, the plastic impulse (q1' = 0,
    joint 2's momentum about its axis kept: M22 q2'+ = M21 q1' + M22 q2'); held while the stop's
    torque lam = M12 q2'' + b1 >= 0, released when it reaches 0. scipy DOP853, rtol 1e-12."""
    from scipy.integrate import solve_ivp

    qmin, T = ARM["q_min"], ARM["T"]

    def free(t, y):
        (M11, M12, M22), (b1, b2) = arm_dyn(*y)
        det = M11 * M22 - M12 * M12
        return [y[2], y[3], (-M22 * b1 + M12 * b2) / det, (M12 * b1 - M11 * b2) / det]

    def held(t, y):
        (M11, M12, M22), (b1, b2) = arm_dyn(qmin, y[1], 0.0, y[3])
        return [0.0, y[3], 0.0, -b2 / M22]

    def lam(t, y):
        (M11, M12, M22), (b1, b2) = arm_dyn(qmin, y[1], 0.0, y[3])
        return M12 * (-b2 / M22) + b1

    def hit(t, y):
        return y[0] - qmin

    hit.terminal, hit.direction = True, -1
    lam.terminal, lam.direction = True, -1
    segs, stops, t, y, mode = [], [], 0.0, [0.0, 0.0, 0.0, 0.0], "free"
    while t < T - 1e-12 and len(segs) < 200:
        if mode == "free":
            sol = solve_ivp(free, (t, T), y, method="DOP853", rtol=1e-12, atol=1e-14,
                            events=hit, dense_output=True)
        else:
            sol = solve_ivp(held, (t, T), y, method="DOP853", rtol=1e-12, atol=1e-14,
                            events=lam, dense_output=True)
        segs.append((t, sol.t[-1], sol.sol, mode))
        t, y = sol.t[-1], list(sol.y[:, -1])
        if sol.status == 1:
            if mode == "free":
                stops.append(t)
                (M11, M12, M22), _ = arm_dyn(*y)
                y = [qmin, y[1], 0.0, y[3] + M12 / M22 * y[2]]
                mode = "held" if lam(t, y) >= 0 else "free"
            else:
                mode = "free"
    return segs, stops


def arm_ref_at(ref, t):
    segs, _ = ref
    out = np.empty((len(t), 4))
    for i, ti in enumerate(t):
        for a, b, sol, mode in segs:
            if a <= ti <= b + 1e-15:
                out[i] = sol(min(max(ti, a), b))
                break
    return out


def robosim_arm(form, setting):
    # the arm has one formulation (joint stops are events); time_stepping/compliant are the
    # contact models of the brick, finger and diff drive only
    p = {".control_dt": 0.01, ".rtol": setting, ".atol": setting * 1e-2,
         "arm.actuator_mode": "0,0", "arm.theta_min": f"{ARM['q_min']},-100",
         "arm.theta_max": "100,100"}
    xs, evs, cpu, fail, fine = robosim_run("serial_arm", ARM["T"], p, ("arm", (0.0, 0.0)))

    def make(xs, tc=math.nan, cpu=math.nan, fail=""):
        t = np.concatenate([[0.0], xs[:, 0]])
        st = np.vstack([[0, 0, 0, 0], xs[:, 1:5]])
        return Traj(t, dict(q1=st[:, 0], q2=st[:, 1], d1=st[:, 2], d2=st[:, 3]), tc, cpu, fail)

    tc = next((te for te, k in evs if k == "stop"), math.nan)
    return with_fine(make(xs, tc, cpu / ARM["T"], fail), make, fine)


def arm_traj(rows, dt, cpu):
    a = np.array(rows)
    t = dt * np.arange(len(a))
    # at the stop: within 1e-4 rad of it, or stopped within 0.02 rad of it (a regularised limit
    # can stop joint 1 short of the stop, as Drake's SAP does)
    hit = np.nonzero((a[:, 0] <= ARM["q_min"] + 1e-4) |
                     ((a[:, 0] <= ARM["q_min"] + 0.02) & (a[:, 2] >= -1e-3)))[0]
    return Traj(t, dict(q1=a[:, 0], q2=a[:, 1], d1=a[:, 2], d2=a[:, 3]),
                t[hit[0]] if len(hit) else math.nan, cpu)


def mujoco_arm(dt):
    import mujoco

    xml = f"""<mujoco><compiler angle='radian'/>
      <option timestep='{dt}' gravity='0 -{G} 0'><flag contact='disable'/></option>
      <worldbody><body name='link1'>
        <joint name='j1' type='hinge' axis='0 0 1' limited='true' range='{ARM['q_min']} 100'
               solreflimit='{2 * dt} 1' solimplimit='0.99 0.99 0.001'/>
        <inertial pos='0.075 0 0' mass='0.2' diaginertia='1e-9 3.75e-4 3.75e-4'/>
        <body name='link2' pos='0.15 0 0'><joint name='j2' type='hinge' axis='0 0 1'/>
          <inertial pos='0.05 0 0' mass='0.1' diaginertia='1e-9 8.333333333333333e-5
                    8.333333333333333e-5'/></body></body></worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    n = int(round(ARM["T"] / dt))
    rows = [(0.0, 0.0, 0.0, 0.0)]
    for _ in range(n):
        mujoco.mj_step(model, data)
        rows.append((data.qpos[0], data.qpos[1], data.qvel[0], data.qvel[1]))

    def timed():
        mujoco.mj_resetData(model, data)
        mujoco.mj_step(model, data, nstep=n)

    return arm_traj(rows, dt, cpu_timed(timed) / ARM["T"])


def pybullet_arm(dt):
    import pybullet as p

    a = ARM
    cid = p.connect(p.DIRECT)
    try:
        n = int(round(a["T"] / dt))

        def build():
            p.resetSimulation(physicsClientId=cid)
            p.setGravity(0, -G, 0, physicsClientId=cid)
            p.setPhysicsEngineParameter(fixedTimeStep=dt, numSubSteps=0, physicsClientId=cid)
            # thin boxes: Bullet takes a link's inertia from its shape, m (a^2 + t^2) / 12 ~ a rod's
            t = 1e-4
            s1 = p.createCollisionShape(p.GEOM_BOX, halfExtents=[a["a1"] / 2, t, t],
                                        physicsClientId=cid)
            s2 = p.createCollisionShape(p.GEOM_BOX, halfExtents=[a["a2"] / 2, t, t],
                                        physicsClientId=cid)
            arm = p.createMultiBody(
                0, -1, basePosition=[0, 0, 0],
                linkMasses=[a["m1"], a["m2"]], linkCollisionShapeIndices=[s1, s2],
                linkVisualShapeIndices=[-1, -1],
                linkPositions=[[0, 0, 0], [a["a1"], 0, 0]],
                linkOrientations=[[0, 0, 0, 1]] * 2,
                linkInertialFramePositions=[[a["a1"] / 2, 0, 0], [a["a2"] / 2, 0, 0]],
                linkInertialFrameOrientations=[[0, 0, 0, 1]] * 2,
                linkParentIndices=[0, 1], linkJointTypes=[p.JOINT_REVOLUTE] * 2,
                linkJointAxis=[[0, 0, 1]] * 2, physicsClientId=cid)
            for j in (0, 1):
                p.setCollisionFilterGroupMask(arm, j, 0, 0, physicsClientId=cid)
                p.changeDynamics(arm, j, linearDamping=0.0, angularDamping=0.0,
                                 jointDamping=0.0, physicsClientId=cid)
            p.changeDynamics(arm, 0, jointLowerLimit=a["q_min"], jointUpperLimit=100.0,
                             physicsClientId=cid)
            # Bullet's default velocity motors hold the joints: off
            p.setJointMotorControlArray(arm, [0, 1], p.VELOCITY_CONTROL, forces=[0, 0],
                                        physicsClientId=cid)
            return arm

        arm = build()
        rows = [(0.0, 0.0, 0.0, 0.0)]
        for _ in range(n):
            p.stepSimulation(physicsClientId=cid)
            js = p.getJointStates(arm, [0, 1], physicsClientId=cid)
            rows.append((js[0][0], js[1][0], js[0][1], js[1][1]))

        def timed():
            build()
            for _ in range(n):
                p.stepSimulation(physicsClientId=cid)

        cpu = cpu_timed(timed)
    finally:
        p.disconnect(cid)
    return arm_traj(rows, dt, cpu / a["T"])


def drake_arm(dt, approximation="sap"):
    from pydrake.math import RigidTransform
    from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
    from pydrake.multibody.tree import (FixedOffsetFrame, RevoluteJoint, SpatialInertia,
                                        UnitInertia)
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder

    a = ARM
    n = int(round(a["T"] / dt))
    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlant(MultibodyPlantConfig(time_step=dt,
                                                      discrete_contact_approximation=approximation),
                                 builder)
    plant.mutable_gravity_field().set_gravity_vector([0, -G, 0])

    def rod(name, m, length):
        # a uniform rod along x, its frame at the joint: I_zz = m L^2 / 3 about the joint
        M = SpatialInertia(m, [length / 2, 0, 0],
                           UnitInertia(1e-12, length ** 2 / 3, length ** 2 / 3))
        return plant.AddRigidBody(name, M)

    l1, l2 = rod("link1", a["m1"], a["a1"]), rod("link2", a["m2"], a["a2"])
    plant.AddJoint(RevoluteJoint("j1", plant.world_frame(), l1.body_frame(), [0, 0, 1],
                                      a["q_min"], 100.0))
    tip = plant.AddFrame(FixedOffsetFrame("link1_tip", l1.body_frame(),
                                          RigidTransform([a["a1"], 0, 0])))
    plant.AddJoint(RevoluteJoint("j2", tip, l2.body_frame(), [0, 0, 1]))
    plant.Finalize()
    diagram = builder.Build()
    sim = Simulator(diagram)
    ctx = sim.get_mutable_context()
    pctx = plant.GetMyMutableContextFromRoot(ctx)

    def reset():
        ctx.SetTime(0.0)
        plant.SetPositions(pctx, [0.0, 0.0])
        plant.SetVelocities(pctx, [0.0, 0.0])
        sim.Initialize()

    reset()
    rows = [(0.0, 0.0, 0.0, 0.0)]
    for k in range(n):
        sim.AdvanceTo((k + 1) * dt)
        q, v = plant.GetPositions(pctx), plant.GetVelocities(pctx)
        rows.append((q[0], q[1], v[0], v[1]))

    def timed():
        reset()
        sim.AdvanceTo(n * dt)

    return arm_traj(rows, dt, cpu_timed(timed) / a["T"])


def arm_metrics(scn, tr, ref):
    grid = np.round(np.arange(0, ARM["T"] + 1e-9, 0.01), 10)
    idx = [int(np.argmin(np.abs(tr.t - g))) for g in grid]
    q = np.column_stack([tr.c[k][idx] for k in ("q1", "q2", "d1", "d2")])
    qr = arm_ref_at(ref, grid)
    E = arm_energy(tr.c["q1"], tr.c["q2"], tr.c["d1"], tr.c["d2"])
    first_stop = ref[1][0] if ref[1] else math.nan
    # the work-precision error: the joint angles over the first 0.3 s (the free swing, the first
    # impact, the release, the second impact); over the whole second the double pendulum's
    # sensitivity after the impacts amplifies any difference (error_1s)
    early = grid <= 0.3 + 1e-9
    return dict(error=float(np.max(np.abs(q[early, :2] - qr[early, :2]))),
                error_1s=float(np.max(np.abs(q[:, :2] - qr[:, :2]))),
                penetration=max(0.0, max(float(ARM["q_min"] - r.c["q1"].min())
                                         for r in runs_of(tr))),
                energy_gain=max(0.0, float((E - E[0]).max())),
                impact_err=abs(tr.t_contact - first_stop),
                swing_err=float(np.max(np.abs(q[grid < first_stop, :2] -
                                              qr[grid < first_stop, :2]))))


def arm_runs(scn, quick, peers):
    tol, steps, _ = settings(quick)
    runs = [("robosim hybrid", "rtol", v, lambda v=v: robosim_arm("hybrid", v))
            for v in tol + ([1e-12] if not quick else [])]
    if "mujoco" in peers:
        runs += [("MuJoCo", "h", v, lambda v=v: mujoco_arm(v)) for v in steps]
    if "pybullet" in peers:
        runs += [("PyBullet", "h", v, lambda v=v: pybullet_arm(v)) for v in steps]
    if "pydrake" in peers:
        runs += [("Drake SAP", "h", v, lambda v=v: drake_arm(v)) for v in steps]
        runs += [("Drake TAMSI", "h", v, lambda v=v: drake_arm(v, "tamsi")) for v in steps]
    return runs


def arm_reference_checked():
    ref = arm_reference()
    print(f"[compare] arm_stop reference: joint 1 reaches its stop at "
          f"{', '.join(f'{t:.9f}' for t in ref[1][:6])} s ({len(ref[1])} impacts in {ARM['T']} s)")
    return ref


# ---- finger_push: the finger pushes the resting object, which slips and sticks ---------------
# m_f = m_o = 1 kg, no drag, F = 0.5 N on the finger from 0.1 m before the object, a plastic
# touch, Coulomb friction of 1 N (static = kinetic) on the object: touch at t1 = sqrt(2 gap /
# (F / m_f)), the pair slides at v1 / 2 and decelerates at (F - 1 N) / 2; it sticks (0.5 N
# pushing is below the 1 N static level) at t_stick = t1 + v1 / (2 |a|), x_o = gap + v^2/(2|a|)
FINGER = dict(F=0.5, gap=0.1, mf=1.0, mo=1.0, fric=1.0, T=2.0, r=0.02, ow=0.1, k=1e6)


def finger_exact():
    f = FINGER
    t1 = math.sqrt(2 * f["gap"] / (f["F"] / f["mf"]))
    v1 = f["F"] / f["mf"] * t1
    v = f["mf"] * v1 / (f["mf"] + f["mo"])
    a = (f["F"] - f["fric"]) / (f["mf"] + f["mo"])
    return dict(t1=t1, t_stick=t1 + v / -a, x_rest=f["gap"] + v * v / (-2 * a))


def robosim_finger(form, setting):
    f = FINGER
    c = 2 * math.sqrt(f["k"] * 0.5)  # critical damping for the reduced mass: plastic
    p = {"finger.contact_model": FORMULATIONS[form], ".control_dt": 0.01,
         "finger.finger_drag": 0.0, "finger.object_drag": 0.0, "finger.static_friction": f["fric"],
         "finger.kinetic_friction": f["fric"], "finger.restitution": 0.0,
         "finger.object_x0": f["gap"], "finger.finger_padding": 0.0,
         "finger.object_padding": 0.0, "finger.finger_stiffness": f["k"],
         "finger.object_stiffness": f["k"], "finger.finger_damping": c,
         "finger.object_damping": c}
    if form == "time_stepping":
        p["finger.ts_step"] = setting
    else:
        p[".rtol"], p[".atol"] = setting, setting * 1e-2
    xs, evs, cpu, fail, fine = robosim_run("finger", f["T"], p, ("finger", (f["F"],)))

    def make(xs, tc=math.nan, cpu=math.nan, fail=""):
        t = np.concatenate([[0.0], xs[:, 0]])
        st = np.vstack([[0, 0, f["gap"], 0], xs[:, 1:5]])
        return Traj(t, dict(xf=st[:, 0], vf=st[:, 1], xo=st[:, 2], vo=st[:, 3]), tc, cpu, fail)

    tc = next((te for te, k in evs if k == "touch"), math.nan)
    tr = with_fine(make(xs, tc, cpu / f["T"], fail), make, fine)
    # the exact stick time where the formulation has the event (hybrid, compliant)
    sticks = [te for te, k in evs if k == "stick"]
    tr.t_stick = sticks[-1] if sticks else math.nan
    return tr


def finger_traj(rows, dt, t_contact, cpu):
    a = np.array(rows)
    return Traj(dt * np.arange(len(a)), dict(xf=a[:, 0], vf=a[:, 1], xo=a[:, 2], vo=a[:, 3]),
                t_contact, cpu)


def mujoco_finger(dt):
    import mujoco

    f = FINGER
    mu = f["fric"] / (f["mo"] * G)
    h = f["ow"] / 2
    # the finger: a sphere on a slide joint at the object's mid height, touching only the object
    # (contype/conaffinity); plastic: critically damped (dampratio 1) at MuJoCo's stiffest
    # stable time constant
    xml = f"""<mujoco><option timestep='{dt}' gravity='0 0 -{G}' cone='pyramidal'/>
      <worldbody>
        <geom name='floor' type='plane' size='0 0 1' friction='{mu} 0 0' contype='1'
              conaffinity='1'/>
        <body name='finger' pos='{-f['r']} 0 {h}'>
          <joint name='slide' type='slide' axis='1 0 0'/>
          <geom type='sphere' size='{f['r']}' mass='{f['mf']}' friction='0 0 0' contype='2'
                conaffinity='2' solref='{2 * dt} 1' solimp='0.99 0.99 0.001'/></body>
        <body name='object' pos='{f['gap'] + h} 0 {h}'><freejoint/>
          <geom type='box' size='{h} {h} {h}' mass='{f['mo']}' friction='{mu} 0 0' contype='3'
                conaffinity='3' solref='{2 * dt} 1' solimp='0.99 0.99 0.001'/></body>
      </worldbody>
      <actuator><motor joint='slide'/></actuator></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    n = int(round(f["T"] / dt))

    def reset():
        mujoco.mj_resetData(model, data)
        data.ctrl[0] = f["F"]

    reset()
    rows, tc = [(0.0, 0.0, f["gap"], 0.0)], math.nan
    fid = model.body("finger").id
    for k in range(n):
        mujoco.mj_step(model, data)
        if math.isnan(tc) and any(fid in (model.geom_bodyid[c.geom1], model.geom_bodyid[c.geom2])
                                  for c in data.contact[:data.ncon]):
            tc = data.time
        # finger tip = the slide's displacement; the object's near face = its centre - h
        rows.append((data.qpos[0], data.qvel[0], data.qpos[1] - h, data.qvel[1]))

    def timed():
        reset()
        mujoco.mj_step(model, data, nstep=n)

    return finger_traj(rows, dt, tc, cpu_timed(timed) / f["T"])


def pybullet_finger(dt):
    import pybullet as p

    f = FINGER
    mu = f["fric"] / (f["mo"] * G)
    h = f["ow"] / 2
    cid = p.connect(p.DIRECT)
    try:
        n = int(round(f["T"] / dt))

        def build():
            p.resetSimulation(physicsClientId=cid)
            p.setGravity(0, 0, -G, physicsClientId=cid)
            p.setPhysicsEngineParameter(fixedTimeStep=dt, numSubSteps=0, physicsClientId=cid)
            plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE,
                                                                physicsClientId=cid),
                                      physicsClientId=cid)
            sph = p.createCollisionShape(p.GEOM_SPHERE, radius=f["r"], physicsClientId=cid)
            finger = p.createMultiBody(
                0, -1, basePosition=[-f["r"], 0, h], linkMasses=[f["mf"]],
                linkCollisionShapeIndices=[sph], linkVisualShapeIndices=[-1],
                linkPositions=[[0, 0, 0]], linkOrientations=[[0, 0, 0, 1]],
                linkInertialFramePositions=[[0, 0, 0]],
                linkInertialFrameOrientations=[[0, 0, 0, 1]], linkParentIndices=[0],
                linkJointTypes=[p.JOINT_PRISMATIC], linkJointAxis=[[1, 0, 0]],
                physicsClientId=cid)
            obj = p.createMultiBody(f["mo"], p.createCollisionShape(
                p.GEOM_BOX, halfExtents=[h, h, h], physicsClientId=cid),
                basePosition=[f["gap"] + h, 0, h], physicsClientId=cid)
            p.setCollisionFilterPair(finger, plane, 0, -1, 0, physicsClientId=cid)
            # Bullet multiplies the coefficients: the plane's friction 1, the finger's 0
            p.changeDynamics(plane, -1, lateralFriction=1.0, restitution=0.0, physicsClientId=cid)
            p.changeDynamics(obj, -1, lateralFriction=mu, restitution=0.0, linearDamping=0.0,
                             angularDamping=0.0, physicsClientId=cid)
            p.changeDynamics(finger, 0, lateralFriction=0.0, restitution=0.0, linearDamping=0.0,
                             angularDamping=0.0, jointDamping=0.0, physicsClientId=cid)
            p.setJointMotorControl2(finger, 0, p.VELOCITY_CONTROL, force=0, physicsClientId=cid)
            return finger, obj

        def step(finger):
            p.setJointMotorControl2(finger, 0, p.TORQUE_CONTROL, force=f["F"],
                                    physicsClientId=cid)
            p.stepSimulation(physicsClientId=cid)

        finger, obj = build()
        rows, tc = [(0.0, 0.0, f["gap"], 0.0)], math.nan
        for k in range(n):
            step(finger)
            if math.isnan(tc) and p.getContactPoints(bodyA=finger, bodyB=obj,
                                                     physicsClientId=cid):
                tc = (k + 1) * dt
            js = p.getJointState(finger, 0, physicsClientId=cid)
            pos, _ = p.getBasePositionAndOrientation(obj, physicsClientId=cid)
            lin, _ = p.getBaseVelocity(obj, physicsClientId=cid)
            rows.append((js[0], js[1], pos[0] - h, lin[0]))

        def timed():
            fg, _ = build()
            for _ in range(n):
                step(fg)

        cpu = cpu_timed(timed)
    finally:
        p.disconnect(cid)
    return finger_traj(rows, dt, tc, cpu / f["T"])


def drake_finger(dt, approximation="sap"):
    from pydrake.geometry import (AddContactMaterial, Box, CollisionFilterDeclaration,
                                  GeometrySet, HalfSpace, ProximityProperties, Sphere)
    from pydrake.math import RigidTransform
    from pydrake.multibody.math import SpatialVelocity
    from pydrake.multibody.plant import (AddMultibodyPlant, CoulombFriction,
                                         MultibodyPlantConfig)
    from pydrake.multibody.tree import PrismaticJoint, SpatialInertia
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder

    f = FINGER
    mu = f["fric"] / (f["mo"] * G)
    h = f["ow"] / 2
    n = int(round(f["T"] / dt))
    builder = DiagramBuilder()
    plant, sg = AddMultibodyPlant(MultibodyPlantConfig(time_step=dt,
                                                       discrete_contact_approximation=approximation,
                                                       contact_model="point"), builder)

    def props(k, friction, tau):
        pp = ProximityProperties()
        AddContactMaterial(dissipation=0.0, point_stiffness=k,
                           friction=CoulombFriction(friction, friction), properties=pp)
        pp.AddProperty("material", "relaxation_time", tau)
        return pp

    # plastic: an over-damped Kelvin-Voigt finger-object contact (relaxation time 2 / omega for
    # the reduced mass, zeta = 1); the object stands on 8 corner spheres (as the brick)
    tau_fo = 2.0 / math.sqrt(f["k"] / 0.5)
    finger = plant.AddRigidBody("finger", SpatialInertia.SolidSphereWithMass(f["mf"], f["r"]))
    obj = plant.AddRigidBody("object", SpatialInertia.SolidBoxWithMass(f["mo"], 2 * h, 2 * h,
                                                                       2 * h))
    joint = plant.AddJoint(PrismaticJoint("slide", plant.world_frame(), finger.body_frame(),
                                          [1, 0, 0]))
    plant.AddJointActuator("push", joint)
    plant.RegisterCollisionGeometry(finger, RigidTransform(), Sphere(f["r"]), "tip",
                                    props(f["k"], 0.0, tau_fo))
    r = 1e-4
    tau_floor = 2.0 / math.sqrt(4 * f["k"] / f["mo"])
    corners = []
    for i, (sx, sy, sz) in enumerate([(a, c, z) for a in (-1, 1) for c in (-1, 1)
                                      for z in (-1, 1)]):
        corners.append(plant.RegisterCollisionGeometry(
            obj, RigidTransform([sx * h, sy * h, sz * (h - r)]), Sphere(r), f"c{i}",
            props(f["k"], mu, tau_floor)))
    face = plant.RegisterCollisionGeometry(obj, RigidTransform(), Box(2 * h, 2 * h, 2 * h),
                                           "face", props(f["k"], 0.0, tau_fo))
    ground = plant.RegisterCollisionGeometry(plant.world_body(), RigidTransform(), HalfSpace(),
                                             "ground", props(1e12, mu, 0.0))
    tip = plant.GetCollisionGeometriesForBody(finger)
    plant.Finalize()
    # the finger meets only the box; the box never the ground (its corners do)
    decl = CollisionFilterDeclaration()
    decl.ExcludeBetween(GeometrySet(tip), GeometrySet(corners + [ground]))
    decl.ExcludeBetween(GeometrySet([face]), GeometrySet([ground]))
    sg.collision_filter_manager().Apply(decl)
    diagram = builder.Build()
    sim = Simulator(diagram)
    ctx = sim.get_mutable_context()
    pctx = plant.GetMyMutableContextFromRoot(ctx)
    plant.get_actuation_input_port().FixValue(pctx, [f["F"]])

    def reset():
        ctx.SetTime(0.0)
        plant.SetFreeBodyPose(pctx, obj, RigidTransform([f["gap"] + h, 0, h]))
        plant.SetFreeBodySpatialVelocity(pctx, obj, SpatialVelocity([0, 0, 0], [0, 0, 0]))
        joint.set_translation(pctx, -f["r"])
        joint.set_translation_rate(pctx, 0.0)
        sim.Initialize()

    port = plant.get_contact_results_output_port()
    reset()
    rows, tc = [(0.0, 0.0, f["gap"], 0.0)], math.nan
    for k in range(n):
        sim.AdvanceTo((k + 1) * dt)
        if math.isnan(tc):
            cr = port.Eval(pctx)
            for i in range(cr.num_point_pair_contacts()):
                info = cr.point_pair_contact_info(i)
                if finger.index() in (info.bodyA_index(), info.bodyB_index()):
                    tc = (k + 1) * dt
        xo = plant.EvalBodyPoseInWorld(pctx, obj).translation()[0] - h
        vo = plant.EvalBodySpatialVelocityInWorld(pctx, obj).translational()[0]
        rows.append((joint.get_translation(pctx) + f["r"], joint.get_translation_rate(pctx), xo,
                     vo))

    def timed():
        reset()
        sim.AdvanceTo(n * dt)

    return finger_traj(rows, dt, tc, cpu_timed(timed) / f["T"])


def finger_metrics(scn, tr, ref):
    ex = finger_exact()
    stuck = np.nonzero((tr.t > ex["t1"] + 0.05) & (np.abs(tr.c["vo"]) < 1e-6))[0]
    E = 0.5 * FINGER["mf"] * tr.c["vf"] ** 2 + 0.5 * FINGER["mo"] * tr.c["vo"] ** 2
    # the energy balance: kinetic energy less the push's work F (x_f - x_f0); nothing else adds
    bal = E - FINGER["F"] * (tr.c["xf"] - tr.c["xf"][0])
    return dict(error=abs(float(tr.c["xo"][-1]) - ex["x_rest"]),
                penetration=max(0.0, max(float((r.c["xf"] - r.c["xo"]).max())
                                         for r in runs_of(tr))),
                energy_gain=max(0.0, float((bal - bal[0]).max())),
                impact_err=abs(tr.t_contact - ex["t1"]),
                stick_err=abs(getattr(tr, "t_stick", math.nan) - ex["t_stick"])
                if math.isfinite(getattr(tr, "t_stick", math.nan)) else
                abs(tr.t[stuck[0]] - ex["t_stick"]) if len(stuck) else math.nan)


def finger_runs(scn, quick, peers):
    tol, steps, ts = settings(quick)
    ex = finger_exact()
    print(f"[compare] finger_push closed form: touch {ex['t1']:.6f} s, stick {ex['t_stick']:.6f} s,"
          f" object at rest at x_o = {ex['x_rest']:.6f} m")
    runs = [("robosim hybrid", "rtol", v, lambda v=v: robosim_finger("hybrid", v)) for v in tol]
    runs += [("robosim time_stepping", "h", v, lambda v=v: robosim_finger("time_stepping", v))
             for v in ts]
    runs += [("robosim compliant", "rtol", v, lambda v=v: robosim_finger("compliant", v))
             for v in tol[:3]]
    if "mujoco" in peers:
        runs += [("MuJoCo", "h", v, lambda v=v: mujoco_finger(v)) for v in steps]
    if "pybullet" in peers:
        runs += [("PyBullet", "h", v, lambda v=v: pybullet_finger(v)) for v in steps]
    if "pydrake" in peers:
        runs += [("Drake SAP", "h", v, lambda v=v: drake_finger(v)) for v in steps]
    return runs


# ---- dd_obstacle and dd_wedge: the diff-drive robot (kinematic), robosim only -------------------
# The robot (radius 0.15 m, wheels 0.09 m) drives straight along x at both wheels 1 rad/s
# (0.09 m/s) into a disk (0.1 m at (1, 0)) or into the wedge between two (0.1 m at (1, +-0.2)):
# contact when the centre reaches the inflated circle, x = 0.75 m (t = 8.3333 s) or x = 0.85 m
# (t = 9.4444 s), blocked there. The peers have no kinematic robot (docs/comparison.md).
DD = {"dd_obstacle": ([1.0, 0.0, 0.1], 0.75), "dd_wedge": ([1.0, 0.2, 0.1, 1.0, -0.2, 0.1], 0.85)}
DD_V, DD_R, DD_T = 0.09, 0.15, 11.0


def robosim_dd(scn, form, setting):
    obst, _ = DD[scn]
    p = {"robot.contact_model": FORMULATIONS[form], ".control_dt": 0.01,
         "robot.obstacles": ",".join(map(repr, obst)), "robot.padding": 0.0}
    if form == "time_stepping":
        p["robot.ts_step"] = setting
    else:
        p[".rtol"], p[".atol"] = setting, setting * 1e-2
    xs, evs, cpu, fail, fine = robosim_run("diff_drive", DD_T, p, ("robot", (1.0, 1.0)))

    def make(xs, tc=math.nan, cpu=math.nan, fail=""):
        t = np.concatenate([[0.0], xs[:, 0]])
        st = np.vstack([[0.0, 0.0, 0.0], xs[:, 1:4]])
        return Traj(t, dict(x=st[:, 0], y=st[:, 1], th=st[:, 2]), tc, cpu, fail)

    tc = next((te for te, k in evs if k == "contact"), math.nan)
    return with_fine(make(xs, tc, cpu / DD_T, fail), make, fine)


def dd_metrics(scn, tr, ref):
    obst, x_stop = DD[scn]
    pen = 0.0
    for r in runs_of(tr):
        for i in range(0, len(obst), 3):
            d = np.hypot(r.c["x"] - obst[i], r.c["y"] - obst[i + 1])
            pen = max(pen, float((DD_R + obst[i + 2] - d).max()))
    return dict(error=abs(float(tr.c["x"][-1]) - x_stop) + abs(float(tr.c["y"][-1])),
                penetration=max(0.0, pen), energy_gain=math.nan,
                impact_err=abs(tr.t_contact - x_stop / DD_V))


def dd_runs(scn, quick, peers):
    tol, _, ts = settings(quick)
    print(f"[compare] {scn}: robosim only (the diff-drive robot is kinematic; no peer models it)")
    runs = [("robosim hybrid", "rtol", v, lambda v=v: robosim_dd(scn, "hybrid", v)) for v in tol]
    runs += [("robosim time_stepping", "h", v, lambda v=v: robosim_dd(scn, "time_stepping", v))
             for v in ts]
    runs += [("robosim compliant", "rtol", v, lambda v=v: robosim_dd(scn, "compliant", v))
             for v in tol[:3]]
    return runs


# filled in below, per scenario
SCENARIOS = {"brick_flat": brick_runs, "brick_tilted": brick_runs, "arm_stop": arm_runs,
             "finger_push": finger_runs, "dd_obstacle": dd_runs, "dd_wedge": dd_runs}
METRICS = {"brick_flat": lambda scn, tr, ref: brick_metrics(scn, tr),
           "brick_tilted": brick_tilted_metrics, "arm_stop": arm_metrics,
           "finger_push": finger_metrics, "dd_obstacle": dd_metrics, "dd_wedge": dd_metrics}
REFERENCES = {"brick_tilted": brick_tilted_reference, "arm_stop": arm_reference_checked}
ERROR_LABEL = {"brick_flat": "rebound apex error, max of h1, h2 (relative)",
               "brick_tilted": "rest pose error (m): centre + R |dtheta|",
               "arm_stop": "max joint-angle error, first 0.3 s (rad)",
               "finger_push": "object rest position error (m)",
               "dd_obstacle": "final position error (m)", "dd_wedge": "final position error (m)"}
EVENT_KEY = {"brick_flat": "impact_err", "brick_tilted": "impact_err", "arm_stop": "impact_err",
             "finger_push": "stick_err", "dd_obstacle": "impact_err", "dd_wedge": "impact_err"}
EVENT_LABEL = {"brick_flat": "first impact time error (s)",
               "brick_tilted": "first impact time error (s)",
               "arm_stop": "time joint 1 first reaches its stop: error (s)",
               "finger_push": "time the object sticks: error (s)",
               "dd_obstacle": "contact time error (s)", "dd_wedge": "contact time error (s)"}

if __name__ == "__main__":
    sys.exit(main())
