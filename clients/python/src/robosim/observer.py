"""robosim.Observer: follow the server's live stream (a ZeroMQ PUB socket) for one world.

    with robosim.Observer("tcp://127.0.0.1:5555", world_id=1) as obs:
        for state in obs:                 # blocks; yields State dicts as the world steps
            print(state["seq"], state["time"])

Each message is two frames: the topic "world/<id>/" and a StreamFrame. `seq` grows by one per
published state of the world; a jump (the observer was slow, or the server rate-limits the
stream) is counted in Observer.missed. The stream endpoint comes from Hello.stream_endpoint
unless given."""
import time
from urllib.parse import urlsplit

import zmq

from . import curve
from ._proto import pb
from .client import Client, state_dict
from .errors import RobosimError, TimeoutError


def _reachable(stream, endpoint):
    """A stream endpoint bound to all interfaces ("*", 0.0.0.0) is reached at the host of the
    request endpoint."""
    s, e = urlsplit(stream), urlsplit(endpoint)
    if s.hostname in ("*", "0.0.0.0", "::", None) and e.hostname:
        return "%s://%s:%s" % (s.scheme, e.hostname, s.port)
    return stream


class Observer:
    """Subscribe to world `world_id` on the server at `endpoint` (its request endpoint; the
    stream endpoint is asked with Hello) or directly at `stream_endpoint`. server_key and
    client_key_file: CurveZMQ keys as for Client (the stream of a CURVE server sends frames
    only to the keys it admits)."""

    def __init__(self, endpoint=None, world_id=1, stream_endpoint=None, timeout=10.0,
                 context=None, server_key=None, client_key_file=None):
        self.world_id = int(world_id)
        self.timeout = timeout
        keys = curve.resolve(server_key, client_key_file)
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
        self.topic = ("world/%d/" % self.world_id).encode()
        self._ctx = context or zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.SUB)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.SUBSCRIBE, self.topic)
        curve.apply(self._sock, keys)
        self._sock.connect(stream_endpoint)
        self.last_seq = None
        self.missed = 0
        self.received = 0

    def next(self, timeout=None):
        """The next State dict of the world (with "seq"); TimeoutError after `timeout` s."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self._sock.poll(max(1, int(left * 1000)), zmq.POLLIN):
                raise TimeoutError(self.stream_endpoint, timeout, "stream frame of world %d"
                                   % self.world_id)
            frames = self._sock.recv_multipart()
            if len(frames) != 2 or frames[0] != self.topic:
                continue
            msg = pb.StreamFrame.FromString(frames[1])
            if self.last_seq is not None and msg.seq > self.last_seq + 1:
                self.missed += msg.seq - self.last_seq - 1
            self.last_seq = msg.seq
            self.received += 1
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

    def close(self):
        if self._sock is not None:
            self._sock.close(0)
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
