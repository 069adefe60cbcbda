"""Recordings of the observer stream in MCAP, robotics' common log format (Foxglove and the
`mcap` tools open them), and their replay.

    robosim record [--endpoint E] [--world ID | --all] --out run.mcap [--duration S] [--frames N]
    robosim replay run.mcap [--world ID] [--plot run.png] [--quiet]

A recording starts at the start of the server's stream history (GetHistory), so one started late
still holds the run from its beginning (as far as the history reaches; what it no longer held is
reported), then follows the live stream until --duration, --frames or Ctrl-C. Each world is one
channel, topic "/world/<id>", schema robosim.v1.StreamFrame (protobuf, the FileDescriptorSet
embedded); each message is the StreamFrame exactly as the server sent it, log time its
StreamFrame.wall_time, sequence its seq. A metadata record "robosim.world" per world holds what
the viewer needs to draw it (its spec and workspaces, JSON), so `replay --view` plays it.

    frames = robosim.record.read("run.mcap")        # [(world_id, seq, StreamFrame, raw), ...]
"""
import json
import sys
import time

from ._proto import pb
from .recording import (END_RECORD, INPUT_TOPIC, TOPIC, Chain, read,  # noqa: F401
                        read_worlds)

PROFILE = "robosim"


def _ns(seconds):
    return int(round(seconds * 1e9))


class Recorder:
    """Write StreamFrames (their bytes as sent) into an MCAP file, a channel per world; the
    Steps that led to them (write_input), when known, on a channel of their own; and at close,
    per world, an end record: its frame count, its last frame's digest and a chain over its
    messages in file order (robosim.recording.Chain), so that a recording cut short at a frame,
    or with frames dropped or reordered, does not verify."""

    def __init__(self, path, metadata=None):
        from mcap.writer import Writer
        from mcap_protobuf.schema import register_schema
        self._file = open(path, "wb")
        # every checksum MCAP has, the data section's too: a reader (robosim.recording) then
        # refuses a file with any byte changed
        self._writer = Writer(self._file, enable_crcs=True, enable_data_crcs=True)
        self._writer.start(profile=PROFILE, library="robosim record")
        self._schema = register_schema(self._writer, pb.StreamFrame)
        self._input_schema = None
        self._channels = {}
        self._inputs = {}
        self._ends = {}  # {world id: [frames, last digest, Chain]}
        self.frames = 0
        if metadata:
            self._writer.add_metadata("robosim", {k: str(v) for k, v in metadata.items()})

    def _end(self, wid):
        e = self._ends.get(wid)
        if e is None:
            e = self._ends[wid] = [0, b"", Chain()]
        return e

    def write(self, frame, raw):
        """Add one frame: `frame` the StreamFrame message, `raw` its serialized bytes."""
        ch = self._channels.get(frame.world_id)
        if ch is None:
            ch = self._channels[frame.world_id] = self._writer.register_channel(
                topic=TOPIC % frame.world_id, message_encoding="protobuf",
                schema_id=self._schema)
        t = _ns(frame.wall_time) if frame.wall_time else time.time_ns()
        self._writer.add_message(channel_id=ch, log_time=t, data=raw, publish_time=t,
                                 sequence=frame.seq & 0xFFFFFFFF)
        e = self._end(frame.world_id)
        e[0] += 1
        e[1] = frame.state.digest
        e[2].add(b"f", raw)
        self.frames += 1

    def write_input(self, world_id, seq, request):
        """Add a request (a robosim.v1.Request, or a Step message) that changed world `world_id`
        before its frame `seq`: verify replays the inputs of a frame as they were sent (a task's
        action, commands, a wrench, a schedule, a motion specification...). Its id, world and
        token are not kept."""
        from mcap_protobuf.schema import register_schema
        if isinstance(request, pb.Step):
            request = pb.Request(step=request)
        else:
            request = pb.Request.FromString(request.SerializeToString())
            request.ClearField("id")
            request.ClearField("world_id")
            request.ClearField("token")
        if self._input_schema is None:
            self._input_schema = register_schema(self._writer, pb.Request)
        ch = self._inputs.get(world_id)
        if ch is None:
            ch = self._inputs[world_id] = self._writer.register_channel(
                topic=INPUT_TOPIC % world_id, message_encoding="protobuf",
                schema_id=self._input_schema)
        raw = request.SerializeToString()
        t = time.time_ns()
        self._writer.add_message(channel_id=ch, log_time=t, data=raw, publish_time=t,
                                 sequence=seq & 0xFFFFFFFF)
        self._end(world_id)[2].add(b"i", raw)

    def add_world(self, info):
        """Keep a world's description (a JSON-able dict with "id") as metadata."""
        self._writer.add_metadata("robosim.world", {"id": str(info["id"]),
                                                    "json": json.dumps(info)})

    def close(self):
        if self._file is not None:
            for wid, (n, digest, chain) in sorted(self._ends.items()):
                self._writer.add_metadata(END_RECORD, {
                    "world": str(wid), "frames": str(n), "digest": bytes(digest).hex(),
                    "chain": chain.hexdigest()})
            self._writer.finish()
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def record_episodes(env, path):
    """A Gymnasium wrapper around a robosim environment (robosim.envs) that records its
    episodes into the MCAP file `path` as robosim record does, with each Step's action on the
    world's input channel, so that robosim verify replays them: every reset a frame (the
    reset's seed), every step the action as the environment sent it and the State it got.
    The file is complete (its end records written) when the wrapper is closed."""
    import gymnasium

    class _RecordEpisodes(gymnasium.Wrapper):
        def __init__(self, env, path):
            super().__init__(env)
            self.recorder = Recorder(path, {"library": "robosim.record.record_episodes"})
            self._seq = 0
            self._described = False

        def _frame(self):
            base = self.env.unwrapped
            msg = base._msg
            self._seq += 1
            frame = pb.StreamFrame(world_id=base.world_id, seq=self._seq, state=msg,
                                   wall_time=time.time())
            return frame

        def reset(self, **kwargs):
            out = self.env.reset(**kwargs)
            base = self.env.unwrapped
            seed = out[1].get("seed") if isinstance(out[1], dict) else None
            if not self._described:
                from .view.messages import world_message
                info = world_message(base.client, base.world_id)
                info["task"] = base.task
                self.recorder.add_world(info)
                self._described = True
            frame = self._frame()
            if seed is not None:
                self.recorder.write_input(base.world_id, frame.seq,
                                          pb.Request(reset=pb.Reset(seed=int(seed))))
            self.recorder.write(frame, frame.SerializeToString())
            return out

        def step(self, action):
            base = self.env.unwrapped
            packed = base._pack(action, base.endpoint)
            import numpy as np
            values = (np.frombuffer(packed, "<f8").tolist()
                      if isinstance(packed, (bytes, bytearray, memoryview))
                      else [float(v) for v in np.ravel(packed)])
            out = self.env.step(action)
            frame = self._frame()
            self.recorder.write_input(base.world_id, frame.seq, pb.Step(steps=1, action=values))
            self.recorder.write(frame, frame.SerializeToString())
            return out

        def close(self):
            try:
                self.recorder.close()
            finally:
                super().close()

    return _RecordEpisodes(env, path)


def record_client(client, path):
    """Record what `client` (a robosim.Client) does to the worlds it creates from now on into
    the MCAP file `path`: each world's description, every request that changes it (Step,
    Reset, SetForce, ApplyWrench, SetSchedule, SetParams, SetTarget, LoadMotionSpec,
    ClearMotionSpec, SetState) on its input channel as sent, and the State each Step or Reset
    returned as a frame; robosim verify replays them. Returns the Recorder: close it (or use it
    as a context manager) to finish the file; the client is then left as it was.

        with robosim.record.record_client(c, "run.mcap"):
            wid = c.create_world("finger")
            c.set_force(wid, "finger", [2.0]); c.step(wid, steps=50)"""
    from .recording import REPLAYABLE
    from .view.messages import world_message
    rec = Recorder(path, {"library": "robosim.record.record_client"})
    seqs = {}  # {world id: frames written}: the worlds created since
    call, step_call = client._call, client._step_call

    def frame_of(wid, state):
        seqs[wid] += 1
        frame = pb.StreamFrame(world_id=wid, seq=seqs[wid], state=state, wall_time=time.time())
        rec.write(frame, frame.SerializeToString())

    def recorded(op, msg, wid, reply):
        if wid in seqs and op in REPLAYABLE:
            rec.write_input(wid, seqs[wid] + 1, pb.Request(**{op: msg}))
            if isinstance(reply, pb.State):
                frame_of(wid, reply)

    def _call(op, msg, world_id=0, token=None, timeout=None):
        reply = call(op, msg, world_id, token, timeout)
        if op == "create_world" and rec._file is not None:
            wid = int(client._keep(reply))  # its token kept first (create_world does it again)
            seqs[wid] = 0
            info = world_message(client, wid)
            rec.add_world(info)
        elif rec._file is not None:
            recorded(op, msg, int(world_id), reply)
        return reply

    def _step_call(data, rid, shard=None):
        reply = step_call(data, rid, shard)
        if rec._file is not None:
            req = pb.Request.FromString(data)
            recorded("step", req.step, int(req.world_id), reply)
        return reply

    client._call, client._step_call = _call, _step_call
    close = rec.close

    def finish():
        client.__dict__.pop("_call", None)
        client.__dict__.pop("_step_call", None)
        close()
    rec.close = finish
    return rec


def record(endpoint, out, world_id=None, duration=None, max_frames=None, idle=None,
           timeout=10.0, on_frame=None, **keys):
    """Record the stream of world `world_id` (None: every world) of the server at `endpoint`
    into `out`, from the start of its history; stop after `duration` s, `max_frames` frames or
    `idle` s without a frame (None: not on that account), or on KeyboardInterrupt. Returns
    (frames written, frames the history had dropped, frames missed in all). keys: server_key,
    client_key_file as for Client."""
    from .client import Client
    from .errors import RobosimError, TimeoutError
    from .observer import Observer
    from .view.messages import world_message
    client = Client(endpoint, timeout=timeout, **keys)
    meta = {"endpoint": endpoint, "server_version": client.server["server_version"],
            "world": "all" if world_id is None else world_id}
    obs = Observer(endpoint, world_id=world_id, timeout=timeout, history=True, **keys)
    start = last_frame = time.monotonic()
    known = set()
    try:
        with Recorder(out, meta) as rec:
            try:
                while max_frames is None or rec.frames < max_frames:
                    left = None if duration is None else duration - (time.monotonic() - start)
                    if left is not None and left <= 0:
                        break
                    wait = min(x for x in (left, idle, 0.5) if x is not None)
                    try:
                        frame, raw = obs.next_frame(timeout=wait)
                    except TimeoutError:
                        if idle is not None and time.monotonic() - last_frame >= idle:
                            break
                        continue
                    last_frame = time.monotonic()
                    if frame.world_id not in known:
                        known.add(frame.world_id)
                        try:
                            rec.add_world(world_message(client, frame.world_id))
                        except RobosimError:
                            pass  # destroyed since: its frames are there, undrawable
                    rec.write(frame, raw)
                    if on_frame:
                        on_frame(frame)
            except KeyboardInterrupt:
                pass
            return rec.frames, obs.dropped, obs.missed
    finally:
        obs.close()
        client.close()


def _print_frame(frame):
    from .client import state_dict
    s = state_dict(frame.state)
    parts = ["world %d" % frame.world_id, "seq %d" % frame.seq, "t %.4f s" % s["time"],
             "step %d" % s["step_count"]]
    for name, e in s["entities"].items():
        parts.append("%s[%s] x=%s" % (name, e["mode"], " ".join("%.4g" % v
                                                              for v in e["state"][:4])))
    if s["task"]:
        parts.append("reward %.4g" % s["task"]["reward"])
    for ev in s["events"]:
        parts.append("EVENT %s.%s@%.4f" % (ev["entity"], ev["kind"], ev["time"]))
    print("  ".join(parts), flush=True)


def plot_frames(frames, out, worlds_info=()):
    """A figure of a recording's frames: per world, each entity's state against simulated
    time with its events marked (named from `worlds_info`, read_worlds' list); a recording of
    one finger world as the 1D Robot article's Figure 1 (robosim.plot)."""
    from . import plot
    from .client import state_dict
    import matplotlib.pyplot as plt
    worlds = {}
    for wid, seq, frame, raw in frames:
        worlds.setdefault(wid, []).append(state_dict(frame.state))
    if len(worlds) == 1:
        states = next(iter(worlds.values()))
        if list(states[0]["entities"]) == ["finger"]:
            plot.plot_finger_run(states, out)
            return
    names = {w["id"]: w["entities"] for w in worlds_info}
    rows = sum(len(states[0]["entities"]) for states in worlds.values())
    fig, axes = plt.subplots(rows, 1, figsize=(8, 2.2 * rows), squeeze=False)
    i = 0
    for wid, states in sorted(worlds.items()):
        t = [s["time"] for s in states]
        for name in states[0]["entities"]:
            ax = axes[i][0]
            i += 1
            x = [s["entities"][name]["state"] for s in states]
            var = names.get(wid, {}).get(name, {}).get("state", [])
            for k in range(len(x[0])):
                ax.plot(t, [v[k] for v in x], lw=1, label=var[k] if k < len(var) else "x%d" % k)
            for s in states:
                for ev in s["events"]:
                    if ev["entity"] == name:
                        ax.axvline(ev["time"], color=plot.EVENT_COLORS.get(ev["kind"], "k"),
                                   lw=0.6, ls="--")
            ax.set_title("world %d: %s (%s)" % (wid, name, states[0]["entities"][name]["kind"]),
                         fontsize=9)
            ax.legend(fontsize=7, loc="upper right", ncol=4)
    axes[-1][0].set_xlabel("simulated time (s)")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def cmd_record(args):
    from .client import DEFAULT_ENDPOINT, env_endpoint
    endpoint = args.endpoint or env_endpoint() or DEFAULT_ENDPOINT
    n, dropped, missed = record(endpoint, args.out, world_id=None if args.all else args.world,
                                duration=args.duration, max_frames=args.frames, idle=args.idle,
                                timeout=args.timeout)
    print("wrote %d frames to %s%s" % (n, args.out, (
        " (%d frames missing: %d no longer in the server's history)" % (missed, dropped))
        if missed else ""))
    return 0


def cmd_replay(args):
    from .recording import RecordingError
    try:
        frames = read(args.file, args.world)
    except RecordingError as exc:  # the reader's one-line reason (robosim.recording)
        print("robosim replay: %s: %s" % (args.file, exc), file=sys.stderr)
        return 2
    if args.view:
        from .view.server import serve
        try:
            serve(replay=args.file, port=args.port, allow_origins=args.allow_origin,
                  max_pages=args.max_pages)
        except ValueError as exc:  # an option that cannot be used
            print("robosim replay: %s" % exc, file=sys.stderr)
            return 2
        return 0
    if not args.quiet:
        for _, _, frame, _ in frames:
            _print_frame(frame)
    if args.plot:
        plot_frames(frames, args.plot, read_worlds(args.file))
        print("wrote %s" % args.plot)
    print("%d frames of %d world(s)" % (len(frames), len({f[0] for f in frames})),
          file=sys.stderr)
    return 0


def add_parsers(sub):
    """The record and replay subcommands (robosim.cli)."""
    r = sub.add_parser("record", help="record the observer stream into an MCAP file, from the "
                                      "start of the server's history")
    r.add_argument("--endpoint", help="server request endpoint (default $ROBOSIM_ENDPOINT, "
                                      "else tcp://127.0.0.1:5555)")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--world", type=int, default=1, help="world id (default 1)")
    g.add_argument("--all", action="store_true", help="every world")
    r.add_argument("--out", required=True, help="MCAP file to write")
    r.add_argument("--duration", type=float, help="stop after this many seconds")
    r.add_argument("--frames", type=int, help="stop after this many frames")
    r.add_argument("--idle", type=float, help="stop after this many seconds without a frame")
    r.set_defaults(fn=cmd_record)
    p = sub.add_parser("replay", help="print, plot or view an MCAP recording")
    p.add_argument("file", help="MCAP file from robosim record")
    p.add_argument("--world", type=int, help="only this world")
    p.add_argument("--plot", help="write a figure of the run here (PNG)")
    p.add_argument("--quiet", action="store_true", help="do not print the frames")
    p.add_argument("--view", action="store_true", help="play it in the browser viewer instead")
    p.add_argument("--port", type=int, default=8765, help="the viewer's port (with --view)")
    from .view import add_access_options
    add_access_options(p)
    p.set_defaults(fn=cmd_replay)

