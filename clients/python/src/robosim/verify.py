"""Verify a recording (robosim record) on this build: replay each world from its creation, with
the commands its frames show, and check every frame's state digest and state bit for bit.

    robosim verify run.mcap [--endpoint E] [--world ID] [--max-step-gap N] [--max-steps N]

First, each world must be whole: the recorder's end record for it (frame count, last frame's
digest, a chain over its frames and inputs in file order: robosim.recording.Chain) must match
the frames the file holds, so a recording cut short at a frame, or with frames dropped,
repeated or reordered, fails; a recording without end records is not verified. Then the world
is rebuilt from the recording's description of it (preset or task, and parameters) and the seed
its frames carry, and replayed: a frame with recorded inputs (the Steps sent, on the world's
input channel: robosim.record.record_episodes records a Gymnasium environment's actions so) is
reached by sending them as they were sent; a frame without is reached by stepping from the frame
before it with the commands it shows; a frame whose step_count is 0 is a Reset (with its seed).
The first frame that differs is reported with the control steps it covers and the first field
that differs, digests in full. What neither the frames nor inputs show is not replayed:
schedules, wrenches, motion specifications, parameter changes and command changes between two
frames of the observer stream (record it with a stream rate that publishes every Step, e.g. a
server started with --stream-max-hz 1000000).

The file is read within the reader's limits (robosim.recording.Limits) and the replay is
planned before a world is created: a world whose frames ask more than --max-step-gap control
steps from one frame to the next, or more than --max-steps in all, is refused. Exit status: 0
every world reproduced, 1 one did not, 2 the file (or an option) cannot be used, 3 the replay
could not run (the server refused or timed out); every error is one line on stderr.
"""
import numpy as np

from . import recording
from ._proto import pb
from .recording import Chain, RecordingError

MAX_STEP_GAP = 100_000      # control steps replayed between two frames of a world, at most
MAX_STEPS = 10_000_000      # control steps replayed in all, at most


def _bits(a):
    return np.asarray(a, dtype=np.float64).tobytes()


def _hex(digest):
    return bytes(digest).hex() if isinstance(digest, (bytes, bytearray)) else str(digest)


def whole(rec, wid):
    """None when world `wid`'s frames in Recording `rec` are the ones its recorder wrote, all
    of them and in that order (its end record's frame count, last digest and chain over its
    messages); else the reason, one line."""
    end = rec.ends.get(wid)
    if end is None:
        return ("world %d: the recording has no end record for it (its frame count and last "
                "digest): it may have been cut short; not verified" % wid)
    frames = [(seq, raw) for w, seq, _, raw in rec.frames if w == wid]
    if len(frames) != end["frames"]:
        return ("world %d: %d frames, its end record says %d were recorded: frames were cut or "
                "dropped" % (wid, len(frames), end["frames"]))
    seqs = [seq for seq, _ in frames]
    bad = next((i for i in range(1, len(seqs)) if seqs[i] <= seqs[i - 1]), None)
    if bad is not None:
        return ("world %d: frame seq %d comes after seq %d in the file: frames reordered or "
                "repeated" % (wid, seqs[bad], seqs[bad - 1]))
    if frames:
        last = pb.StreamFrame.FromString(frames[-1][1]).state.digest.hex()
        if last != end["digest"]:
            return ("world %d: its last frame's digest is %s, its end record says %s: the "
                    "recording does not end where it was recorded" % (wid, last, end["digest"]))
    if rec.chains.get(wid, Chain().hexdigest()) != end["chain"]:
        return ("world %d: its frames and inputs are not the ones recorded in that order (the "
                "chain over them is %s, its end record says %s)"
                % (wid, rec.chains.get(wid, ""), end["chain"]))
    return None


def first_difference(want, got, names=None):
    """The first field in which two State dicts (state_dict) differ, as a string, or None."""
    names = names or {}
    if _bits(want["time"]) != _bits(got["time"]):
        return "time (%.17g s recorded, %.17g s replayed)" % (want["time"], got["time"])
    if want["step_count"] != got["step_count"]:
        return "step_count (%d recorded, %d replayed)" % (want["step_count"], got["step_count"])
    for ent, w in want["entities"].items():
        g = got["entities"].get(ent)
        if g is None:
            return "entity %s (not in the replayed world)" % ent
        for part in ("state", "commands", "sensors"):
            a, b = np.asarray(w[part], dtype=np.float64), np.asarray(g[part], dtype=np.float64)
            if a.shape != b.shape:
                return "%s.%s (%d values recorded, %d replayed)" % (ent, part, a.size, b.size)
            for i in range(a.size):
                if a[i:i + 1].tobytes() != b[i:i + 1].tobytes():
                    label = names.get(ent, {}).get(part, [])
                    var = label[i] if i < len(label) else "%s[%d]" % (part, i)
                    return "%s.%s (%r recorded, %r replayed)" % (ent, var, float(a[i]), float(b[i]))
        if w["mode"] != g["mode"]:
            return "%s mode (%s recorded, %s replayed)" % (ent, w["mode"], g["mode"])
    if want["digest"] != got["digest"]:
        return "digest only (%s recorded, %s replayed): a part of the state a frame does not " \
               "show (random generator, the robots' run variables, the integrator's next step)" \
               % (_hex(want["digest"]), _hex(got["digest"]))
    return None


def plan(rec, world_id=None, max_step_gap=MAX_STEP_GAP, max_steps=MAX_STEPS):
    """The replay of Recording `rec` (robosim.recording.load): {world id: [(seq, step_count,
    raw), ...] seq ascending}, checked before anything runs. RecordingError when there is nothing
    to verify, or when a world's frames ask more than max_step_gap control steps from one frame
    to the next (its first: from its creation) or more than max_steps in all."""
    by_world = {}
    for wid, seq, step_count, raw in rec.frames:
        if world_id is None or wid == world_id:
            by_world.setdefault(wid, []).append((seq, step_count, raw))
    if not by_world:
        raise RecordingError("no frames" if world_id is None else
                             "no frames of world %d" % world_id)
    total = 0
    for wid, frames in by_world.items():
        frames.sort(key=lambda f: f[0])
        done = 0
        for seq, step_count, _ in frames:
            if step_count < done or (step_count == 0 and done):
                done = 0  # a Reset: replayed as one
            gap = step_count - done
            if gap > max_step_gap:
                raise RecordingError(
                    "world %d: frame seq %d is %d control steps after the %s; the limit is %d "
                    "(--max-step-gap)" % (wid, seq, gap, "world's creation" if done == 0 else
                                          "frame before it", max_step_gap))
            total += gap
            if total > max_steps:
                raise RecordingError("the frames ask more than %d control steps in all, the "
                                     "limit (--max-steps)" % max_steps)
            done = step_count
    return by_world


def _inputs_fit(raws, want, done, prev_time):
    """None when a frame's recorded Steps ask no more than the frame shows (its control steps
    since the frame before, or since a Reset among them; its simulated time likewise); else the
    reason: a forged input must not make verify run longer than the frames it checks."""
    steps, seconds, t0, n0 = 0, 0.0, prev_time, done
    for raw in raws:
        req = pb.Request.FromString(raw)
        op = req.WhichOneof("op")
        if op in ("reset", "set_state"):
            steps, seconds, t0, n0 = 0, 0.0, 0.0, 0
            if op == "set_state":
                return None  # the snapshot sets the clock: the server bounds the rest
        elif op == "step":
            if req.step.WhichOneof("length") == "duration":
                seconds += req.step.duration
            else:
                steps += req.step.steps or 1
    if steps > max(0, want["step_count"] - n0) or \
            seconds > max(0.0, want["time"] - t0) * (1 + 1e-9) + 1e-9:
        return ("its recorded inputs ask %d control steps and %.9g s, more than the frame is "
                "after the one before it (%d steps, %.9g s)"
                % (steps, seconds, want["step_count"] - n0, want["time"] - t0))
    return None


def _replay_inputs(client, w, raws):
    """Send a frame's recorded requests (robosim.v1.Request bytes) to world w as they were sent;
    the State the last Step or Reset among them returned (GetState's when none did)."""
    from .client import state_dict
    got = None
    for raw in raws:
        req = pb.Request.FromString(raw)
        op = req.WhichOneof("op")
        reply = client._call(op, getattr(req, op), w)
        if isinstance(reply, pb.State):
            got = reply
    return state_dict(got) if got is not None else client.get_state(w)


def verify_world(client, wid, frames, info, out=print, inputs=None):
    """Replay one world's frames (StreamFrame messages, seq ascending; a list or an iterable);
    returns (ok, message). inputs: {frame seq: [raw robosim.v1.Request, ...]}, the requests
    recorded as leading to that frame (replayed as sent); a frame without any is reached by
    stepping from the frame before it with the commands it shows."""
    from .client import state_dict
    inputs = inputs or {}
    frames = iter(frames)
    first = next(frames, None)
    if first is None:
        return True, "world %d: no frames" % wid
    if info is None:
        return False, "world %d: the recording does not describe it (preset, parameters)" % wid
    if info.get("task") and not inputs:
        return False, ("world %d runs task %s and the recording holds no inputs for it (its "
                       "actions): record it with robosim.record.record_episodes or "
                       "record_client; not verified"
                       % (wid, info["task"]))
    if not info.get("preset") and not info.get("task"):
        return False, "world %d: the recording names no preset for it" % wid
    names = {e: {"state": d["state"], "sensors": d["sensors"], "commands": d["actuators"]}
             for e, d in info["entities"].items()}
    params = {"%s.%s" % (e, k): v for e, d in info["entities"].items()
              for k, v in d.get("params", {}).items()}
    unknown = next((k for k, v in params.items() if None in v), None)
    if unknown:  # the description keeps a non-finite value as null
        return False, "world %d: the recording does not hold %s's value (not finite)" % (
            wid, unknown)
    from .errors import ProtocolError, RobosimError, TimeoutError
    try:
        if info.get("task"):
            w = client.create_world(task=info["task"], params=params, seed=first.state.seed)
        else:
            w = client.create_world(info["preset"], params=params, seed=first.state.seed)
    except (TimeoutError, ProtocolError):
        raise  # the replay could not run (exit status 3)
    except RobosimError as exc:  # the recording's description is not a world this build makes
        return False, "world %d: the server refuses the recording's description of it: %s" % (
            wid, exc)
    try:
        done = count = 0
        prev_time = 0.0
        frame = first
        while frame is not None:
            count += 1
            want = state_dict(frame.state)
            steps = inputs.get(frame.seq)
            if not steps and (want["step_count"] < done or (want["step_count"] == 0 and done)):
                client.reset(w, seed=want["seed"])
                done = 0
            n = want["step_count"] - done
            try:
                if steps:  # the requests that led to this frame, as they were sent
                    why = _inputs_fit(steps, want, done, prev_time)
                    if why:
                        return False, "world %d, frame seq %d: %s" % (wid, frame.seq, why)
                    got = _replay_inputs(client, w, steps)
                else:
                    cmds = {e: list(d["commands"]) for e, d in want["entities"].items()
                            if len(d["commands"])}
                    got = client.step(w, steps=n, commands=cmds) if n else client.get_state(w)
            except (TimeoutError, ProtocolError):
                raise
            except RobosimError as exc:  # what the frame asks is not a Step this world takes
                return False, ("world %d: the server refuses the replay of frame seq %d: %s"
                               % (wid, frame.seq, exc))
            diff = first_difference(want, got, names)
            if diff:
                where = ("control step %d" % want["step_count"] if n <= 1 else
                         "control steps %d-%d" % (done + 1, want["step_count"]))
                return False, ("world %d diverges at frame seq %d, %s (t = %.9g s): %s" % (
                    wid, frame.seq, where, want["time"], diff))
            done, prev_time = want["step_count"], want["time"]
            last, frame = frame, next(frames, None)
        return True, "world %d: %d frames, %d control steps, every digest reproduced (%s)" % (
            wid, count, done, last.state.digest.hex())
    finally:
        client.destroy_world(w)


def verify(path, endpoint=None, world_id=None, out=print, limits=None,
           max_step_gap=MAX_STEP_GAP, max_steps=MAX_STEPS, **keys):
    """Verify recording `path` on the server at `endpoint` (None: a local server of this
    build). Returns 0 when every world reproduced, 1 otherwise; `out` gets one line per world.
    Raises RecordingError (before any server starts) for a file the reader refuses
    (robosim.recording.Limits `limits`) or whose replay is past max_step_gap / max_steps."""
    from .client import Client
    rec = recording.load(path, limits)
    by_world = plan(rec, world_id, max_step_gap, max_steps)
    local = None
    if endpoint is None:
        from .server import LocalServer
        local = LocalServer()
        local.__enter__()
        endpoint = local.endpoint
    ok_all = True
    try:
        with Client(endpoint, **keys) as client:
            for wid in sorted(by_world):
                reason = whole(rec, wid)
                if reason:
                    out("FAILED: " + reason)
                    ok_all = False
                    continue
                frames = (pb.StreamFrame.FromString(raw) for _, _, raw in by_world[wid])
                inputs = {}
                for seq, raw in rec.inputs.get(wid, ()):
                    inputs.setdefault(seq, []).append(raw)
                ok, msg = verify_world(client, wid, frames, rec.worlds.get(wid), out, inputs)
                out(("ok: " if ok else "FAILED: ") + msg)
                ok_all &= ok
    finally:
        if local is not None:
            local.__exit__(None, None, None)
    return 0 if ok_all else 1


def cmd_verify(args):
    limits = recording.limits_from_args(args)

    def run():
        rc = verify(args.file, endpoint=args.endpoint, world_id=args.world, limits=limits,
                    max_step_gap=args.max_step_gap, max_steps=args.max_steps,
                    out=lambda s: print(s, flush=True))
        if rc:
            raise recording.CommandFailed("not every world reproduced (see above)")
        return rc
    return recording.run_command("verify", args.file, run)


HELP = """Replays each world of the recording from its creation on a server of this build and checks
every frame's state digest and state bit for bit; one line per world on stdout. Each world must
first be whole: its end record (frame count, last digest, a chain over its messages) matches the
frames in the file, so a cut, a dropped or a reordered frame fails. Recorded inputs (a task's
actions: robosim.record.record_episodes) are replayed as sent.

%s
The replay is planned before any world is created: a world whose frames ask more than
--max-step-gap control steps (default %d) between two frames (its first frame: from its
creation), or frames asking more than --max-steps control steps in all (default %d), are refused.

exit status:
  0  every world reproduced
  1  a world did not reproduce (its first differing frame is named) or could not be verified
     (no end record or one that does not match, a task world without recorded inputs, a world
     the recording does not describe or the server will not rebuild)
  2  the file cannot be used: not a regular file, unreadable, truncated, damaged, past a limit,
     or an option is wrong
  3  the replay could not run: the server refused a request, timed out or could not start
Any error is one line on stderr: "robosim verify: FILE: REASON".
"""


def add_parser(sub):
    import argparse
    v = sub.add_parser("verify", help="replay an MCAP recording on this build and check every "
                                      "frame's state digest",
                       description=HELP % (recording.LIMITS_HELP, MAX_STEP_GAP, MAX_STEPS),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("file", help="MCAP file from robosim record")
    v.add_argument("--endpoint", help="server to replay on (default: a local server of this "
                                      "build)")
    v.add_argument("--world", type=int, help="only this world")
    v.add_argument("--max-step-gap", type=recording.positive_int, default=MAX_STEP_GAP,
                   metavar="N", help="control steps between two frames of a world, at most "
                                     "(default %(default)d)")
    v.add_argument("--max-steps", type=recording.positive_int, default=MAX_STEPS, metavar="N",
                   help="control steps replayed in all, at most (default %(default)d)")
    recording.add_limit_options(v)
    v.set_defaults(fn=cmd_verify)
