"""Verify a recording (robosim record) on this build: replay each world from its creation, with
the commands its frames show, and check every frame's state digest and state bit for bit.

    robosim verify run.mcap [--endpoint E] [--world ID]

A world is rebuilt from the recording's description of it (preset and parameters) and the seed
its frames carry, then stepped from frame to frame with that frame's commands; a frame whose
step_count is 0 is a Reset (with its seed). The first frame that differs is reported with the
control steps it covers and the first field that differs. What the frames cannot show is not
replayed: task actions, schedules, wrenches, motion specifications, parameter changes, and
command changes between two frames (record with a stream rate that publishes every Step,
e.g. a server started with --stream-max-hz 1000000).
"""
import sys

import numpy as np

from .record import read, read_worlds


def _bits(a):
    return np.asarray(a, dtype=np.float64).tobytes()


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
               % (want["digest"][:16], got["digest"][:16])
    return None


def verify_world(client, wid, frames, info, out=print):
    """Replay one world's frames (StreamFrame messages, seq ascending); returns (ok, message)."""
    from .client import state_dict
    if not frames:
        return True, "world %d: no frames" % wid
    if info is None:
        return False, "world %d: the recording does not describe it (preset, parameters)" % wid
    if info.get("task"):
        return False, "world %d runs task %s: its actions are not in the frames; not verified" % (
            wid, info["task"])
    names = {e: {"state": d["state"], "sensors": d["sensors"], "commands": d["actuators"]}
             for e, d in info["entities"].items()}
    params = {"%s.%s" % (e, k): v for e, d in info["entities"].items()
              for k, v in d.get("params", {}).items()}
    first = frames[0].state
    w = client.create_world(info["preset"], params=params, seed=first.seed)
    try:
        done = 0
        for frame in frames:
            want = state_dict(frame.state)
            if want["step_count"] < done or (want["step_count"] == 0 and done):
                client.reset(w, seed=want["seed"])
                done = 0
            n = want["step_count"] - done
            cmds = {e: list(d["commands"]) for e, d in want["entities"].items()
                    if len(d["commands"])}
            got = client.step(w, steps=n, commands=cmds) if n else client.get_state(w)
            diff = first_difference(want, got, names)
            if diff:
                where = ("control step %d" % want["step_count"] if n <= 1 else
                         "control steps %d-%d" % (done + 1, want["step_count"]))
                return False, ("world %d diverges at frame seq %d, %s (t = %.9g s): %s" % (
                    wid, frame.seq, where, want["time"], diff))
            done = want["step_count"]
        return True, "world %d: %d frames, %d control steps, every digest reproduced (%s)" % (
            wid, len(frames), done, frames[-1].state.digest.hex()[:16])
    finally:
        client.destroy_world(w)


def verify(path, endpoint=None, world_id=None, out=print, **keys):
    """Verify recording `path` on the server at `endpoint` (None: a local server of this
    build). Returns 0 when every world reproduced, 1 otherwise; `out` gets one line per world."""
    from .client import Client
    frames = read(path, world_id)
    infos = {w["id"]: w for w in read_worlds(path)}
    by_world = {}
    for wid, seq, frame, raw in frames:
        by_world.setdefault(wid, []).append(frame)
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
                fr = sorted(by_world[wid], key=lambda f: f.seq)
                ok, msg = verify_world(client, wid, fr, infos.get(wid), out)
                out(("ok: " if ok else "FAILED: ") + msg)
                ok_all &= ok
    finally:
        if local is not None:
            local.__exit__(None, None, None)
    return 0 if ok_all and by_world else 1


def cmd_verify(args):
    return verify(args.file, endpoint=args.endpoint, world_id=args.world,
                  out=lambda s: print(s, flush=True))


def add_parser(sub):
    v = sub.add_parser("verify", help="replay an MCAP recording on this build and check every "
                                      "frame's state digest")
    v.add_argument("file", help="MCAP file from robosim record")
    v.add_argument("--endpoint", help="server to replay on (default: a local server of this "
                                      "build)")
    v.add_argument("--world", type=int, help="only this world")
    v.set_defaults(fn=cmd_verify)
