"""robosim.Observer: follow the server's live stream (a ZeroMQ PUB socket) for one world, or
for all of them.

    with robosim.Observer("tcp://127.0.0.1:5555", world_id=1) as obs:
        for state in obs:                 # blocks; yields State dicts as the world steps
            print(state["seq"], state["time"])

Each message is two frames: the topic "world/<id>/" and a StreamFrame. `seq` grows by one per
published state of the world; a jump (the observer was slow, or the server rate-limits the
stream) is counted in Observer.missed. The stream endpoint comes from Hello.stream_endpoint
unless given. world_id=None follows every world (topic "world/").

With history=True (a server with stream history, GetHistory) the observer first replays the
kept frames from seq `from_seq` (1: the start of the history; with world_id=None, of every world
the server holds then), then follows the live stream; whenever a live frame's seq jumps it
fetches the frames in between from the history (for a world it has not seen yet, from seq 1),
and it skips frames it already has. So each world's frames come as seq 1, 2, 3, ... with no gap
and no duplicate; frames the history no longer held are counted in Observer.dropped (and
missed), never skipped silently.

    with robosim.Observer("tcp://127.0.0.1:5555", world_id=1, history=True) as obs:
        frame, raw = obs.next_frame()     # the StreamFrame message and its bytes as sent"""
import collections
import time
from typing import Optional
from urllib.parse import urlsplit

import zmq

from . import curve
from ._proto import pb
from ._closing import Closing
from .client import Client, state_dict
from .errors import RobosimError, TimeoutError


def _reachable(stream, endpoint):
    """A stream endpoint bound to all interfaces ("*", 0.0.0.0) is reached at the host of the
    request endpoint."""
    s, e = urlsplit(stream), urlsplit(endpoint)
    if s.hostname in ("*", "0.0.0.0", "::", None) and e.hostname:
        return "%s://%s:%s" % (s.scheme, e.hostname, s.port)
    return stream


class Observer(Closing):
    """Subscribe to world `world_id` (None: every world) on the server at `endpoint` (its
    request endpoint; the stream endpoint is asked with Hello) or directly at
    `stream_endpoint`. server_key and client_key_file: CurveZMQ keys as for Client (the stream
    of a CURVE server sends frames only to the keys it admits). history, from_seq: see the
    module's text (needs `endpoint`)."""

    def __init__(self, endpoint: Optional[str] = None, world_id: Optional[int] = 1,
                 stream_endpoint: Optional[str] = None, timeout: float = 10.0,
                 context: Optional[zmq.Context] = None, server_key: Optional[str] = None,
                 client_key_file: Optional[str] = None, history: bool = False,
                 from_seq: int = 1) -> None:
        self.world_id = None if world_id is None else int(world_id)
        self.timeout = timeout
        keys = curve.resolve(server_key, client_key_file)
        if history and endpoint is None:
            raise ValueError("history=True needs the server's request endpoint")
        if stream_endpoint is None:
            if endpoint is None:
                raise ValueError("give the server's endpoint or its stream_endpoint")
            with Client(endpoint, timeout=timeout, server_key=server_key,
                        client_key_file=client_key_file) as c:
                stream_endpoint = c.server["stream_endpoint"]
            if not stream_endpoint:
                raise RobosimError.from_name(
                    "FAILED_PRECONDITION", "the server at %s publishes no stream (started "
                    "without one?)" % endpoint, endpoint)
            stream_endpoint = _reachable(stream_endpoint, endpoint)
        self.stream_endpoint = stream_endpoint
        self.topic = b"world/" if self.world_id is None else ("world/%d/" % self.world_id).encode()
        self._ctx = context or zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.SUB)
        self._release_on_collect(self._sock.close, 0)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.SUBSCRIBE, self.topic)
        curve.apply(self._sock, keys)
        self._sock.connect(stream_endpoint)
        self._last: dict = {}  # world id -> last seq yielded (or accounted for)
        self.missed = 0
        self.dropped = 0
        self.received = 0
        # (frame, raw) from the history, to yield first
        self._queue: collections.deque = collections.deque()
        self._client = None
        if history:
            self._client = Client(endpoint, timeout=timeout, server_key=server_key,
                                  client_key_file=client_key_file)
            worlds = ([self.world_id] if self.world_id is not None
                      else [w["world_id"] for w in self._client.list_worlds()])
            for wid in worlds:
                self._catch_up(wid, max(1, int(from_seq)))

    @property
    def last_seq(self) -> Optional[int]:
        """The last seq yielded of the world (with world_id=None: of the last frame's world)."""
        if self.world_id is not None:
            return self._last.get(self.world_id)
        return self._last_any if self._last else None

    def _catch_up(self, wid, from_seq):
        """Start following world wid at from_seq: queue its kept frames from there."""
        self._last[wid] = from_seq - 1  # gaps count from from_seq on
        last = self._fill(wid, from_seq, None)
        if last > self._last[wid] and not any(f.world_id == wid for f, _ in self._queue):
            # nothing kept: what was published is dropped; follow on from there
            self.missed += last - self._last[wid]
            self._last[wid] = last

    def _fill(self, wid, from_seq, upto):
        """Queue world wid's kept frames from `from_seq` to `upto` (None: all it holds); the
        world's last published seq."""
        last = 0
        while upto is None or from_seq <= upto:
            try:
                r = self._client.get_history(wid, from_seq)
            except RobosimError as exc:
                if exc.code_name == "NOT_FOUND":  # destroyed meanwhile
                    return last
                raise
            self.dropped += r.dropped  # counted in missed too once the gap is yielded over
            last = r.last_seq
            for raw in r.frames:
                f = pb.StreamFrame.FromString(raw)
                if upto is not None and f.seq > upto:
                    return last
                self._queue.append((f, raw))
                from_seq = f.seq + 1
            if not r.more:
                break
        return last

    def next_frame(self, timeout: Optional[float] = None) -> tuple:
        """The next frame: (StreamFrame message, its serialized bytes as the server sent them);
        TimeoutError after `timeout` s."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            if self._queue:
                msg, raw = self._queue.popleft()
                if msg.seq <= self._last.get(msg.world_id, 0):
                    continue  # already yielded
                return self._yield(msg, raw)
            left = deadline - time.monotonic()
            if left <= 0 or not self._sock.poll(max(1, int(left * 1000)), zmq.POLLIN):
                raise TimeoutError(self.stream_endpoint, timeout, "stream frame of %s" % (
                    "any world" if self.world_id is None else "world %d" % self.world_id))
            frames = self._sock.recv_multipart()
            if len(frames) != 2 or not frames[0].startswith(self.topic):
                continue
            msg = pb.StreamFrame.FromString(frames[1])
            if self._client is not None:
                wid = msg.world_id
                if wid not in self._last:  # a world seen for the first time: its past first
                    self._catch_up(wid, 1)
                    self._queue.append((msg, frames[1]))
                    continue
                if msg.seq <= self._last[wid]:
                    continue  # the history gave it already
                if msg.seq > self._last[wid] + 1:  # the frames in between, from the history
                    self._fill(wid, self._last[wid] + 1, msg.seq - 1)
                    self._queue.append((msg, frames[1]))
                    continue
            return self._yield(msg, frames[1])

    def _yield(self, msg, raw):
        last = self._last.get(msg.world_id)
        if last is not None and msg.seq > last + 1:
            self.missed += msg.seq - last - 1
        self._last[msg.world_id] = msg.seq
        self._last_any = msg.seq
        self.received += 1
        return msg, raw

    def next(self, timeout: Optional[float] = None) -> dict:
        """The next State dict (with "seq"); TimeoutError after `timeout` s."""
        msg, _ = self.next_frame(timeout)
        state = state_dict(msg.state)
        state["seq"] = msg.seq
        return state

    def __iter__(self):
        while True:
            try:
                yield self.next()
            except TimeoutError:
                if self._sock is None:
                    return
                continue

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._sock is not None:
            self._release_now()
            self._sock = None

