"""Fitting a world's physical parameters to a recorded run (system identification), with the
server doing the rollouts and their derivatives.

The recorded run is states x_0 .. x_K at the control steps of a world started from known
initial conditions, and the commands u_0 .. u_{K-1} held over each step. For a guess p of the
parameters the server replays the commands from the same start, one control step per request
with the step's Jacobian (Client.step(jacobian=True)), and the sensitivities
S_k = dx_k / dp follow from S_{k+1} = (dx_{k+1}/dx_k) S_k + dx_{k+1}/dp, exactly through the
contact events (saltation matrices). The search starts from the lowest cost among the guess and
points spread over the bounds (replays without derivatives), then SciPy's least_squares
(trust-region reflective, with bounds) minimises the scaled residuals sim - recorded with that
Jacobian (Gauss-Newton / Levenberg-Marquardt steps). A Step the server reports not
differentiable does not stop the fit: that evaluation's Jacobian is differences of whole
replays, and the result counts those Steps. Standard errors come from the Jacobian at the
optimum, cov = s^2 (J^T J)^-1 with s^2 the residual variance; the intervals (95 % and 99 %) use
Student's t. docs/derivatives-and-fitting.md says what they mean and how their coverage is
tested.

    robosim fit run.npz --preset finger --param finger.kinetic_friction=0.4,0,2 ...

A recording is a dict (or .npz) with "states" (K+1, n), "commands" (K, m), optional "times",
or an MCAP from robosim record (its frames' states and commands: from_mcap). The command line
tells the two apart by their first bytes and reads either within the limits of
robosim.recording (load_recording): exit status 0 the fit converged, 1 it did not, 2 the file or
an option cannot be used, 3 the replay could not run; every error one line on stderr."""
import json
import zlib
from typing import Optional

import numpy as np

from . import recording
from .client import Client
from .errors import RobosimError
from .recording import RecordingError, UsageError

MAX_STEPS = 20_000  # control steps a recording may hold (each evaluation replays them all)
MAX_NFEV = 200      # evaluations of the replay least_squares may make
MAX_STARTS = 4      # local searches, from the lowest-cost starting points, at most



class FitError(RuntimeError):
    """A replay the fit cannot use (a step that is not differentiable there, say)."""


def _split(item):
    """("finger", "kinetic_friction", None) or ("arm", "mu_V", 1) from "arm.mu_V[1]"."""
    entity, _, name = item.partition(".")
    k = None
    if name.endswith("]") and "[" in name:
        name, _, idx = name[:-1].partition("[")
        k = int(idx)
    return entity, name, k


class Replay:
    """Replays commands on a world of `preset` (or `task`) with `fixed` parameters and the
    fitted ones set to values, returning the states and their sensitivities."""

    def __init__(self, client: Client, preset: str, fixed: Optional[dict], names: list,
                 world_params: Optional[dict] = None):
        self.client, self.preset, self.names = client, preset, list(names)
        self.fixed = dict(fixed or {})
        self.fixed.update(world_params or {})
        wid = client.create_world(preset, params=self.fixed)
        try:
            spec = client.get_spec(wid)
        finally:
            client.destroy_world(wid)
        self.entities = [(name, len(e["actuators"]), len(e["state"]))
                         for name, e in spec["entities"].items()]
        self.state_names = ["%s.%s" % (name, v["name"]) for name, e in spec["entities"].items()
                            for v in e["state"]]
        self.spec = spec

    def params(self, values):
        """The CreateWorld parameters: the fixed ones with the fitted ones set (an element of a
        vector parameter replaced in the world's current vector)."""
        out = dict(self.fixed)
        for item, v in zip(self.names, values):
            entity, name, k = _split(item)
            if k is None:
                out[item] = [float(v)]
            else:
                key = "%s.%s" % (entity, name)
                vec = list(out.get(key, self.spec["entities"][entity]["params"][name]["values"]))
                vec[k] = float(v)
                out[key] = vec
        return out

    def commands(self, u):
        out, i = {}, 0
        for name, nu, _ in self.entities:
            if nu:
                out[name] = [float(x) for x in u[i:i + nu]]
            i += nu
        return out

    def run(self, values, commands, jacobian=True):
        """(states (K+1, n), sensitivities (K+1, n, q) or None, steps not differentiable) for
        the commands (K, m). A Step the server reports not differentiable (a mode change inside
        it that its derivatives do not cover) breaks the chain of sensitivities: its index is
        listed and the sensitivities are then None (fit() differentiates whole replays)."""
        c = self.client
        wid = c.create_world(self.preset, params=self.params(values))
        try:
            s = c.get_state(wid)
            x = np.concatenate([e["state"] for e in s["entities"].values()])
            n, q = len(x), len(self.names)
            xs, ss = [x], [np.zeros((n, q))]
            S = ss[0]
            self.events = []
            self.not_differentiable = []
            if not jacobian and len(commands):  # every Step sent before the first reply is read
                states = c.step_pipelined([{"world_id": wid, "steps": 1,
                                            "commands": self.commands(u)} for u in commands])
                for s in states:
                    if isinstance(s, Exception):
                        raise s
                    xs.append(np.concatenate([e["state"] for e in s["entities"].values()]))
                    self.events.extend(e["kind"] for e in s["events"])
                return np.array(xs), None, []
            for k, u in enumerate(commands):
                s = c.step(wid, steps=1, commands=self.commands(u), jacobian=jacobian,
                           jacobian_params=self.names if jacobian else None,
                           parts=["state", "events"])
                xs.append(np.concatenate([e["state"] for e in s["entities"].values()]))
                self.events.extend(e["kind"] for e in s["events"])
                if jacobian:
                    j = s["jacobian"]
                    if not j["differentiable"]:
                        self.not_differentiable.append((k, j["not_differentiable"]))
                        S = None
                    elif S is not None:
                        P = np.column_stack([j["params"][nm] for nm in self.names]) if q else \
                            np.zeros((n, 0))
                        S = j["state"] @ S + P
                    ss.append(S)
            nd = list(self.not_differentiable)
            if not jacobian or nd:
                return np.array(xs), None, nd
            return np.array(xs), np.array(ss), nd
        finally:
            c.destroy_world(wid)


def _starts(guess, lower, upper, count, rng):
    """The guess and `count` points spread over the bounds (a Latin hypercube; a parameter
    without finite bounds is spread over [guess / 4, 4 guess] or [-1, 1] about it)."""
    q = len(guess)
    lo, hi = lower.copy(), upper.copy()
    for i in range(q):
        if not np.isfinite(lo[i]) or not np.isfinite(hi[i]):
            span = 3 * abs(guess[i]) if guess[i] else 1.0
            lo[i] = max(lower[i], guess[i] - span)
            hi[i] = min(upper[i], guess[i] + span)
    pts = [guess]
    if count and q:
        u = (np.argsort(rng.random((q, count)), axis=1).T + rng.random((count, q))) / count
        pts.extend(lo + u * (hi - lo))
    return np.array(pts)


def fit(client: Client, recording, params: dict, preset: str, fixed: Optional[dict] = None,
        observed: Optional[list] = None, scale=None, world_params: Optional[dict] = None,
        verbose: int = 0, starts: Optional[int] = None, level: float = 0.95) -> dict:
    """Estimate `params` ({"finger.kinetic_friction": (guess, lower, upper), ...}) from a
    recording ({"states": (K+1, n), "commands": (K, m)}) of a world of `preset` with `fixed`
    parameters (its initial conditions among them). observed: the state variables compared
    ("finger.x_f", ...; default all); scale: each observed variable's residual scale (default
    1: the residuals' variance is estimated from the fit either way). world_params: e.g.
    {"rtol": 1e-12} for the replays.

    The residual sum of squares is not convex in parameters that decide which contact events
    happen (a restitution, a friction): a local search from a guess on the wrong side of an
    event ends in a wrong minimum. So the cost is first evaluated (replays without
    derivatives, cheap) at the guess and at `starts` points spread over the bounds (default
    8 per parameter, 0: the guess only), and the local search (SciPy's least_squares,
    trust-region reflective) starts from the lowest. Its Jacobian is the replay's forward
    sensitivities, exact through contact events; where the server reports a Step not
    differentiable (a mode change its derivatives do not cover), that evaluation's Jacobian is
    differences of whole replays instead (central, or one-sided where one side jumps), and the
    result says how many Steps were.

    Intervals: the Gauss-Newton covariance s^2 (J^T J)^-1 at the optimum, s^2 the residual
    variance (sum of squares / (residuals - parameters)), with Student's t quantiles: "interval"
    at 99 %, "interval_level" at `level` (0.95). They are as good as the model is linear over
    them and the noise is independent with one scale per observed variable (`scale`).

    Returns {"names", "estimates", "stderr", "interval" (99 %, (q, 2)), "interval_level",
    "level", "residual_rms", "cost", "nfev", "success", "message", "not_differentiable" (Steps
    not differentiable at the estimate), "jacobian" ("sensitivities" or "differences of
    replays"), "start", "simulated" (K, n), "recorded", "state_names", "observed"}."""
    from scipy.optimize import least_squares
    from scipy.stats import t as student_t

    names = list(params)
    guess = np.array([params[nm][0] for nm in names], dtype=float)
    lower = np.array([params[nm][1] for nm in names], dtype=float)
    upper = np.array([params[nm][2] for nm in names], dtype=float)
    replay = Replay(client, preset, fixed, names, world_params)
    X = np.asarray(recording["states"], dtype=float)
    if "step_count" in recording:  # states at these control steps (an MCAP: from step 1 on)
        at = np.asarray(recording["step_count"], dtype=int)
    else:  # states[k] after k steps, states[0] the start
        at = np.arange(len(X))
    keep = at > 0
    X, at = X[keep], at[keep]
    if X.ndim != 2 or X.shape[1] != len(replay.state_names) or not len(at):
        raise RecordingError("the recording's states are %s; a %s world's are (K, %d)"
                             % ("x".join(map(str, X.shape)), preset, len(replay.state_names)))
    nu = sum(m for _, m, _ in replay.entities)
    U = np.asarray(recording["commands"], dtype=float)
    if U.size != int(at.max()) * nu:
        raise RecordingError("the recording's commands are %s; %d steps of a %s world's %d "
                             "actuators are %d values" % ("x".join(map(str, U.shape)),
                                                          int(at.max()), preset, nu,
                                                          int(at.max()) * nu))
    U = U.reshape(int(at.max()), nu)
    unknown = [o for o in observed or () if o not in replay.state_names]
    if unknown:
        raise UsageError("%s: not a state variable of a %s world (%s)"
                         % (unknown[0], preset, ", ".join(replay.state_names)))
    obs = [replay.state_names.index(o) for o in observed] if observed else \
        list(range(X.shape[1]))
    sc = np.ones(len(obs)) if scale is None else np.broadcast_to(np.asarray(scale, float),
                                                                (len(obs),))
    cache = {}

    def evaluate(p, jac=True):
        """The replay at p: with its sensitivities (jac) or without (a residual evaluation at a
        trial point, about ten times cheaper)."""
        key = p.tobytes()
        hit = cache.get(key)
        if hit is None or (jac and hit[3] is False):
            cache.clear()
            cache[key] = hit = replay.run(p, U, jacobian=jac) + (jac,)
        return hit[:3]

    def scaled(xs):
        return ((xs[at][:, obs] - X[:, obs]) / sc).ravel()

    def residuals(p):
        return scaled(evaluate(p, jac=False)[0])

    def central(p):
        """d residuals / d p by differences of whole replays, steps of 1e-3 of the parameter's
        range. A replay is only piecewise smooth in a parameter (an event that happens or not, a
        body that stops or slides on): a difference across a jump reports the jump as a slope.
        So the forward and the backward differences are compared: within a factor of 4 of each
        other, their mean (central) is taken; else the smaller, the side without the jump."""
        r0 = residuals(p)
        cols = []
        for i in range(len(p)):
            span = upper[i] - lower[i]
            h = 1e-3 * (span if np.isfinite(span) and span > 0 else max(1.0, abs(p[i])))
            side = []
            for sgn in (1, -1):
                a = p.copy()
                a[i] = min(max(p[i] + sgn * h, lower[i]), upper[i])
                if a[i] != p[i]:
                    ra = scaled(replay.run(a, U, jacobian=False)[0])
                    side.append((ra - r0) / (a[i] - p[i]))
            if not side:
                cols.append(np.zeros(len(r0)))
                continue
            norms = [np.linalg.norm(d) for d in side]
            if len(side) == 2 and max(norms) <= 4 * min(norms):
                cols.append((side[0] + side[1]) / 2)
            else:
                cols.append(side[int(np.argmin(norms))])
        return np.column_stack(cols) if cols else np.zeros((len(r0), 0))

    def jacobian(p):
        _, ss, nd = evaluate(p)
        if ss is None:
            return central(p)
        return (ss[at][:, obs, :] / sc[None, :, None]).reshape(-1, len(names))

    # where to start the local search: the lowest costs among the guess and spread points
    count = 8 * len(names) if starts is None else int(starts)
    pts = _starts(guess, lower, upper, count, np.random.default_rng(0))
    costs = []
    for p in pts:
        try:
            r0 = scaled(replay.run(p, U, jacobian=False)[0])
        except RobosimError:  # parameters the world refuses (kinetic above static friction)
            r0 = np.array([np.inf])
        costs.append(float(r0 @ r0) if np.all(np.isfinite(r0)) else np.inf)
    order = [i for i in np.argsort(costs, kind="stable") if np.isfinite(costs[i])] or [0]
    dof = max(1, len(at) * len(obs) - len(names))
    # with the noise's scale given, a sum of squares past this is no fit (chi-square, 1e-4)
    from scipy.stats import chi2
    implausible = chi2.ppf(1 - 1e-4, dof) if scale is not None else np.inf
    best = None
    for i in order[:MAX_STARTS]:
        r = least_squares(residuals, pts[i], jac=jacobian, bounds=(lower, upper),
                          method="trf", x_scale="jac", xtol=1e-12, ftol=1e-12, gtol=1e-12,
                          max_nfev=MAX_NFEV, verbose=verbose)
        if best is None or r.cost < best.cost:
            best, start = r, pts[i]
        if 2 * best.cost <= implausible:
            break
    # still no plausible fit: the event structure (a bounce more or less) cuts the truth's
    # basin off from where the search stopped; look around it at shrinking radii
    span = np.where(np.isfinite(upper - lower), upper - lower, np.abs(best.x) + 1.0)
    for radius in (0.1, 0.03, 0.01):
        if 2 * best.cost <= implausible:
            break
        near = _starts(best.x, np.maximum(lower, best.x - radius * span),
                       np.minimum(upper, best.x + radius * span), 8 * len(names),
                       np.random.default_rng(1))[1:]
        costs = []
        for p in near:
            try:
                r0 = scaled(replay.run(p, U, jacobian=False)[0])
            except RobosimError:
                r0 = np.array([np.inf])
            costs.append(0.5 * float(r0 @ r0) if np.all(np.isfinite(r0)) else np.inf)
        i = int(np.argmin(costs))
        if costs[i] < best.cost:
            r = least_squares(residuals, near[i], jac=jacobian, bounds=(lower, upper),
                              method="trf", x_scale="jac", xtol=1e-12, ftol=1e-12, gtol=1e-12,
                              max_nfev=MAX_NFEV, verbose=verbose)
            if r.cost < best.cost:
                best, start = r, near[i]
    r = best
    xs, ss, nd = evaluate(r.x)
    J = jacobian(r.x)
    res = residuals(r.x)
    dof = max(1, res.size - len(names))
    s2 = float(res @ res) / dof
    success, message = bool(r.status > 0), str(r.message)
    if 2 * r.cost > implausible:
        success = False
        message = ("the residuals are %.3g times the noise's stated scale (from %d starts): "
                   "a local minimum, or a model that does not fit the recording"
                   % (np.sqrt(2 * r.cost / dof), min(len(order), MAX_STARTS)))
    se = np.full(len(names), np.inf)
    if not np.all(np.isfinite(J)):
        success, message = False, "the Jacobian at the estimate is not finite"
    else:
        JtJ = J.T @ J
        if len(names) and np.linalg.matrix_rank(JtJ) < len(names):
            success = False
            message = ("the recording does not determine every parameter (the Jacobian's "
                       "columns are dependent at the estimate): " + message)
        else:
            cov = np.linalg.pinv(JtJ) * s2
            se = np.sqrt(np.clip(np.diag(cov), 0, None))
    if r.nfev >= MAX_NFEV and r.status <= 0:
        success, message = False, "%d evaluations without converging" % r.nfev
    t99 = float(student_t.ppf(0.995, dof))
    tl = float(student_t.ppf(0.5 + level / 2, dof))
    return {"names": names, "estimates": r.x.copy(), "stderr": se, "steps": at,
            "interval": np.column_stack([r.x - t99 * se, r.x + t99 * se]),
            "interval_level": np.column_stack([r.x - tl * se, r.x + tl * se]), "level": level,
            "residual_rms": float(np.sqrt(np.mean(res ** 2))), "cost": float(r.cost),
            "nfev": int(r.nfev), "success": success, "message": message,
            "not_differentiable": len(nd), "replayed_steps": len(U),
            "not_differentiable_reasons": [why for _, why in nd],
            "jacobian": "sensitivities" if ss is not None else "differences of replays",
            "start": start, "simulated": xs[at], "recorded": X,
            "state_names": replay.state_names, "observed": [replay.state_names[i] for i in obs]}


def record_run(client: Client, preset: str, params: dict, commands, world_params=None):
    """A recording made by the server itself: the states of a world of `preset` with `params`
    driven by `commands` (K, m), as fit() reads them ({"states", "commands", "times"})."""
    replay = Replay(client, preset, params, [], world_params)
    U = np.asarray(commands, dtype=float)
    xs, _, _ = replay.run(np.zeros(0), U, jacobian=False)
    dt = replay.spec["world"]["control_dt"]
    return {"states": xs, "commands": U, "times": dt * np.arange(len(xs)),
            "state_names": replay.state_names, "events": list(replay.events)}


def from_mcap(path, world_id=None, limits=None, max_steps=MAX_STEPS) -> dict:
    """A recording from an MCAP of robosim record (one world: world_id, or the file's only
    one), recorded from the world's first control step on: each frame's state at its
    step_count, and the commands a frame reports, held over the step that led to it. Read
    within `limits` (robosim.recording.Limits); RecordingError for a file the fit cannot use."""
    return from_recording(recording.load(path, limits), world_id, max_steps)


def from_recording(rec, world_id=None, max_steps=MAX_STEPS) -> dict:
    """from_mcap's recording from a robosim.recording.Recording already read."""
    from .recording import pb
    frames = [(step, raw) for wid, _, step, raw in rec.frames
              if world_id is None or wid == world_id]
    if not frames:
        raise RecordingError("no frames" if world_id is None else
                             "no frames of world %d" % world_id)
    if world_id is None and len({w for w, _, _, _ in rec.frames}) != 1:
        raise RecordingError("holds several worlds; name one (--world)")
    if len(frames) > max_steps:
        raise RecordingError("%d frames; the fit takes at most %d control steps (--max-steps)"
                             % (len(frames), max_steps))
    frames.sort(key=lambda f: f[0])
    steps = [step for step, _ in frames]
    if steps != list(range(1, len(frames) + 1)):
        bad = next(i for i, s in enumerate(steps) if s != i + 1)
        raise RecordingError("the fit needs a frame at every control step from the world's "
                             "first; frame %d is at step %d" % (bad + 1, steps[bad]))
    frames = [pb.StreamFrame.FromString(raw).state for _, raw in frames]
    states = [np.concatenate([list(e.state) for e in f.entities] or [[]]) for f in frames]
    commands = [np.concatenate([list(e.commands) for e in f.entities] or [[]]) for f in frames]
    if len({len(x) for x in states}) != 1 or len({len(u) for u in commands}) != 1:
        raise RecordingError("frames of different sizes (entities, states or commands)")
    return _checked({"states": np.array(states), "commands": np.array(commands),
                     "step_count": np.array(steps), "times": np.array([f.time for f in frames])})


def _checked(rec):
    for key in ("states", "commands"):
        if not np.all(np.isfinite(rec[key])):
            raise RecordingError("%s that are not finite numbers" % key)
    return rec


NPZ_ARRAYS = ("states", "commands", "times", "step_count")


def from_npz(path, limits=None, max_steps=MAX_STEPS) -> dict:
    """A recording from an .npz ({"states": (K+1, n), "commands": (K, m)}, optional "times"):
    each array's header read and checked (a numeric dtype, its size against the member's and
    the limits) before its data, never pickled objects; RecordingError otherwise."""
    import zipfile
    limits = limits or recording.DEFAULT_LIMITS
    f, _ = recording.open_regular(path, limits.file_bytes)
    out = {}
    budget = limits.total_bytes
    try:
        with f, zipfile.ZipFile(f) as z:
            members = {i.filename: i for i in z.infolist()}
            for key in NPZ_ARRAYS:
                info = members.get(key + ".npy")
                if info is None:
                    continue
                if info.file_size > budget:
                    raise RecordingError("%s.npy: %d bytes, past the limit of %d bytes in all"
                                         % (key, info.file_size, limits.total_bytes))
                budget -= info.file_size
                out[key] = _npy(z, info, key, max_steps)
    except RecordingError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError,
            NotImplementedError, RuntimeError, zlib.error) as exc:
        raise RecordingError("not a readable .npz (%s)" % str(exc)[:100]) from None
    for key in ("states", "commands"):
        if key not in out:
            raise RecordingError("no %s array (an .npz recording has states (K+1, n) and "
                                 "commands (K, m))" % key)
    X, U = out["states"], out["commands"]
    if X.ndim != 2 or U.ndim not in (1, 2) or len(X) != len(U) + 1 or len(U) < 1:
        raise RecordingError("states %s and commands %s; the fit needs (K+1, n) and (K, m)"
                             % (X.shape, U.shape))
    out["states"], out["commands"] = X.astype(float), U.astype(float).reshape(len(U), -1)
    out.pop("step_count", None)  # the states of an .npz are at steps 0..K
    return _checked(out)


def _npy(z, info, key, max_steps):
    from numpy.lib import format as npf
    with z.open(info) as m:
        version = npf.read_magic(m)
        if version == (1, 0):
            shape, fortran, dtype = npf.read_array_header_1_0(m)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = npf.read_array_header_2_0(m)
        else:
            raise RecordingError("%s.npy: .npy format version %s" % (key, version))
        if any(d < 0 for d in shape):
            raise RecordingError("%s.npy: a negative dimension in its header" % key)
        if dtype.kind not in "fiu" or dtype.hasobject or len(shape) > 2:
            raise RecordingError("%s.npy: a %d-dimensional %s array; the fit reads numbers, at "
                                 "most 2-dimensional" % (key, len(shape), dtype))
        if shape and shape[0] > max_steps + 1:
            raise RecordingError("%s.npy: %d rows; the fit takes at most %d control steps "
                                 "(--max-steps)" % (key, shape[0], max_steps))
        count = int(np.prod(shape, dtype=object))
        nbytes = count * dtype.itemsize
        if nbytes > info.file_size:
            raise RecordingError("%s.npy: its header says %d bytes of data, the member holds "
                                 "fewer" % (key, nbytes))
        data = m.read(nbytes)
        if len(data) != nbytes or m.read(1):
            raise RecordingError("%s.npy: its data is not the size its header says" % key)
    a = np.frombuffer(data, dtype=dtype)
    return a.reshape(shape, order="F" if fortran else "C")


def load_recording(path, world_id=None, limits=None, max_steps=MAX_STEPS) -> dict:
    """The recording in `path`, an MCAP of robosim record or an .npz, told apart by its first
    bytes (from_mcap, from_npz); RecordingError for anything else."""
    limits = limits or recording.DEFAULT_LIMITS
    f, _ = recording.open_regular(path, limits.file_bytes)
    with f:
        head = f.read(8) or b""
    if head.startswith(recording.MAGIC):
        return from_mcap(path, world_id, limits, max_steps)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return from_npz(path, limits, max_steps)
    raise RecordingError("neither an MCAP recording nor an .npz (it starts with %r)" % head[:8]
                         if head else "an empty file")


def plot(result: dict, path: str) -> None:
    """Recorded (dots) against fitted (lines) trajectories of the observed variables, to path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    obs = result["observed"]
    idx = [result["state_names"].index(o) for o in obs]
    k = result["steps"]
    fig, axes = plt.subplots(len(idx), 1, figsize=(7, 1.8 * len(idx)), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, i, name in zip(axes, idx, obs):
        ax.plot(k, result["recorded"][:, i], ".", ms=3, label="recorded")
        ax.plot(k, result["simulated"][:, i], "-", lw=1, label="fitted")
        ax.set_ylabel(name, fontsize=8)
    axes[0].legend(fontsize=8)
    axes[-1].set_xlabel("control step")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(result: dict) -> str:
    pct = "%g %%" % (100 * result.get("level", 0.95))
    lines = ["%-28s %14s %12s   %-28s %s" % ("parameter", "estimate", "std error",
                                             pct + " interval", "99 % interval")]
    for nm, v, se, (l2, h2), (lo, hi) in zip(result["names"], result["estimates"],
                                             result["stderr"], result["interval_level"],
                                             result["interval"]):
        lines.append("%-28s %14.8g %12.3g   %-28s [%.8g, %.8g]"
                     % (nm, v, se, "[%.8g, %.8g]" % (l2, h2), lo, hi))
    lines.append("residual rms %.3g (scaled), %d evaluations: %s"
                 % (result["residual_rms"], result["nfev"], result["message"]))
    nd = result.get("not_differentiable", 0)
    if nd:
        lines.append("%d of %d replayed steps not differentiable at the estimate (%s): the "
                     "Jacobian there is differences of whole replays (central, or one-sided "
                     "where a side jumps)"
                     % (nd, result["replayed_steps"], result["not_differentiable_reasons"][0]))
    else:
        lines.append("every replayed step differentiable at the estimate: the Jacobian is the "
                     "replay's forward sensitivities")
    if not result["success"]:
        lines.append("NOT CONVERGED: the estimates and intervals above are not a fit")
    return "\n".join(lines)


HELP = """\
Estimates a world's parameters from a recorded run: the server replays the recorded commands
one control step a request with the step's Jacobian; SciPy's least_squares fits the states,
starting from the lowest cost among the guess and 8 points per parameter spread over the bounds.
A replayed step the server reports not differentiable is counted and differentiated by whole
replays instead. The report gives each estimate with its standard error and its 95 %% and 99 %%
intervals (Gauss-Newton covariance from the residual variance, Student's t); with --noise a fit
whose residuals are implausibly large for that noise is reported as not converged.

The recording is an MCAP from robosim record (a frame at every control step from the world's
first) or an .npz with states (K+1, n) and commands (K, m), told apart by their first bytes.
%s
An .npz's arrays are read header first (numbers only, at most 2-dimensional, their size checked
against the member's) and never unpickled. The recording holds at most --max-steps control steps
(default %d); each evaluation replays them all, at most %d evaluations.

exit status:
  0  the fit converged
  1  it did not converge (the search did not settle, the recording does not determine every
     parameter, or with --noise the residuals are implausible for that noise)
  2  the file cannot be used (not a regular file, unreadable, truncated, damaged, past a limit,
     not matching the world) or an option is wrong
  3  the replay could not run: the server refused a request, timed out or could not start
Any error is one line on stderr: "robosim fit: FILE: REASON".
"""


def add_parser(sub):
    import argparse
    p = sub.add_parser("fit", help="estimate a world's parameters from a recorded run (the "
                       "server replays it with step Jacobians; SciPy's least_squares)",
                       description=HELP % (recording.LIMITS_HELP, MAX_STEPS, MAX_NFEV),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("recording", help=".npz with states (K+1, n) and commands (K, m), or an "
                   "MCAP from robosim record")
    p.add_argument("--preset", required=True)
    p.add_argument("--param", action="append", default=[], metavar="ITEM=GUESS,LO,HI",
                   help="a parameter to estimate, e.g. finger.kinetic_friction=0.4,0,5")
    p.add_argument("--fixed", default="{}", help="JSON of the world's other parameters (its "
                   "initial conditions among them), e.g. '{\"finger.object_x0\": [0.1]}'")
    p.add_argument("--observe", default="", help="state variables compared, comma-separated "
                   "(default all)")
    p.add_argument("--noise", type=float, default=None, metavar="SIGMA",
                   help="the measurement noise's standard deviation, when known: residuals "
                   "are scaled by it, and a fit whose residuals are implausibly large for it "
                   "(chi-square, p < 1e-4) is reported as not converged")
    p.add_argument("--world", type=int, default=None, help="MCAP: the recorded world's id")
    p.add_argument("--plot", default=None, help="write recorded vs fitted trajectories here")
    p.add_argument("--endpoint", default=None)
    p.add_argument("--max-steps", type=recording.positive_int, default=MAX_STEPS, metavar="N",
                   help="control steps in the recording, at most (default %(default)d)")
    recording.add_limit_options(p)
    p.set_defaults(fn=_main)


def _params(specs):
    params = {}
    for spec in specs:
        item, _, vals = spec.partition("=")
        try:
            g, lo, hi = (float(v) for v in vals.split(","))
        except ValueError:
            raise UsageError("--param %s: not ITEM=GUESS,LO,HI" % spec[:80]) from None
        if not (np.isfinite([g, lo, hi]).all() and lo <= g <= hi) or "." not in item:
            raise UsageError("--param %s: not ENTITY.NAME=GUESS,LO,HI with LO <= GUESS <= HI"
                             % spec[:80])
        params[item] = (g, lo, hi)
    if not params:
        raise UsageError("no --param to estimate")
    return params


def _fixed(text):
    try:
        fixed = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError("--fixed is not JSON (%s)" % str(exc)[:80]) from None
    if not isinstance(fixed, dict):
        raise UsageError("--fixed is not a JSON object")
    return fixed


def _main(args):
    return recording.run_command("fit", args.recording, lambda: _run(args))


def _run(args):
    from .client import env_endpoint
    from .server import LocalServer
    params, fixed = _params(args.param), _fixed(args.fixed)
    if args.noise is not None and not (np.isfinite(args.noise) and args.noise > 0):
        raise UsageError("--noise %r: not a positive number" % args.noise)
    rec = load_recording(args.recording, args.world, recording.limits_from_args(args),
                         args.max_steps)
    endpoint = args.endpoint or env_endpoint()
    server = None if endpoint else LocalServer()
    try:
        with Client(endpoint or server.endpoint) as c:
            try:
                res = fit(c, rec, params, args.preset, fixed=fixed, scale=args.noise,
                          observed=[o for o in args.observe.split(",") if o] or None)
            except FitError as exc:
                raise recording.CommandFailed(str(exc)) from None
    finally:
        if server:
            server.close()
    print(report(res))
    if args.plot:
        plot(res, args.plot)
        print("plot:", args.plot)
    if not res["success"]:
        raise recording.CommandFailed("the fit did not converge: %s" % res["message"])
    return 0
