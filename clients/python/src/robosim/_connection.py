"""The connection under robosim.Client: one ZeroMQ DEALER socket to a robosim-server,
requests sent and their replies matched by id, timeouts, the controller tokens the client holds,
and pipelined columnar StepBatches (send_arrays / recv_arrays: several in flight at once,
answered in whatever order the server finishes them)."""
from __future__ import annotations

import itertools
import os
import socket
import time
from typing import Any, Optional
from urllib.parse import urlsplit

import numpy as np
import zmq

from . import curve
from ._closing import Closing
from ._logs import keep_log
from ._messages import arrays_columns, op_message
from ._proto import pb
from ._wire import ArraysRequest, read_arrays_reply, response_id
from .errors import ProtocolError, RobosimError, TimeoutError

PROTOCOL_MAJOR = 1
PROTOCOL_MINOR = 3  # 1.1: StepBatch.arrays; 1.2: oneofs, Step.parts, SI, base_pose; 1.3: routes
# seconds a call waits for its reply unless told (timeout=, $ROBOSIM_TIMEOUT): long enough for a
# loaded machine (a 10 s default ended training runs at a load average of 22)
DEFAULT_TIMEOUT = 60.0
DEFAULT_ENDPOINT = "tcp://127.0.0.1:5555"
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def default_timeout() -> float:
    """$ROBOSIM_TIMEOUT (seconds) when set and positive, else DEFAULT_TIMEOUT."""
    value = os.environ.get("ROBOSIM_TIMEOUT", "").strip()
    if value:
        try:
            seconds = float(value)
        except ValueError:
            raise ValueError("ROBOSIM_TIMEOUT=%r: a number of seconds is required" % value)
        if seconds > 0:
            return seconds
    return DEFAULT_TIMEOUT


def env_endpoint() -> Optional[str]:
    """$ROBOSIM_ENDPOINT (as the C tools read it), or None when unset or empty."""
    return os.environ.get("ROBOSIM_ENDPOINT") or None


def check_listening(endpoint: str, timeout: float = 1.0) -> None:
    """For a tcp endpoint on this machine: raise RobosimError UNAVAILABLE at once when nothing
    listens there (the connection is refused), rather than letting the first request wait its
    whole timeout. Other endpoints are left to ZeroMQ."""
    try:
        u = urlsplit(endpoint)
        host, port = u.hostname, u.port
    except ValueError:
        return
    if u.scheme != "tcp" or host not in LOOPBACK or not port:
        return
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except ConnectionRefusedError:
        raise RobosimError.from_name(
            "UNAVAILABLE", "nothing listens on %s (connection refused): is a robosim-server "
            "running there? Start one (robosim-server --bind %s), or leave the endpoint and "
            "$ROBOSIM_ENDPOINT unset to start a local one" % (endpoint, endpoint), endpoint)
    except OSError:
        pass  # slow or filtered: the request's own timeout decides



def _close_sockets(first: list, links: dict) -> None:
    """Close a connection's sockets: `first` holds its first one, `links` its shards' (what
    Connection.close and the finalizer of an unclosed connection run; refers to no Connection)."""
    for sock in first + [s for s in links.values() if s is not None]:
        sock.close(0)
    first.clear()
    links.clear()


class Connection(Closing):
    """One DEALER socket to the server at `endpoint` (connected, nothing sent yet): requests
    by id, replies matched to them, the tokens held. Client adds the operations and, with a
    server of several shards, the connections to the shards' own ports (_shard_socket)."""

    def __init__(self, endpoint: str, timeout: Optional[float] = None,
                 context: Optional[zmq.Context] = None, keys: Any = None) -> None:
        self.endpoint = endpoint
        self.timeout = default_timeout() if timeout is None else float(timeout)
        # the log file of the server this process started for this client (LocalServer), named
        # in a TimeoutError and then kept
        self.server_log: Optional[str] = None
        self._ctx = context or zmq.Context.instance()
        self._keys = keys
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._rcvtimeos: dict = {}  # socket -> the RCVTIMEO last set on it
        self._links: dict = {}      # shard -> its socket, or None: its port does not answer
        self._shard_of: dict = {}   # world id -> its shard, for the worlds this client controls
        self._inflight: dict = {}   # request id -> (socket, worlds) of a StepBatch sent, unread
        self._arrived: dict = {}    # request id -> its reply, read while waiting for another
        try:
            curve.apply(self._sock, keys)
            self._sock.connect(endpoint)
        except zmq.ZMQError as exc:
            self._sock.close()
            raise RobosimError.from_name("INVALID_ARGUMENT",
                                         "cannot connect to %r: %s" % (endpoint, exc), endpoint)
        self._release_on_collect(_close_sockets, [self._sock], self._links)
        self._ids = itertools.count(1)
        self._tokens: dict = {}

    def close(self) -> None:
        """Close the sockets (idempotent). Pipelined StepBatches not yet received are
        forgotten: their worlds have stepped, or will, on the server."""
        if self._sock is not None:
            self._release_now()
            self._sock = None
        self._links.clear()
        self._rcvtimeos.clear()
        self._inflight.clear()
        self._arrived.clear()

    def _shard_socket(self, k):
        """The connection to shard k's own port, or None (use the first connection)."""
        return None

    def _route(self, req):
        """The socket for Request `req`."""
        return self._sock

    def _keep(self, reply):
        """Hold the token of the world a CreateWorldReply names; its id."""
        wid = reply.world.world_id
        self._tokens[wid] = reply.token
        return wid

    def _request(self, op, msg, world_id=0, token=None):
        req = pb.Request(id=next(self._ids), world_id=int(world_id))
        if token is None and world_id:
            token = self._tokens.get(int(world_id), "")
        req.token = token or ""
        getattr(req, op).CopyFrom(msg)
        return req

    def call(self, req: Any, timeout: Optional[float] = None, *, world_id: int = 0,
             token: Optional[str] = None, **fields: Any) -> Any:
        """Any operation, and return the Response's result message (a protobuf message);
        raise RobosimError for an Error reply, TimeoutError when none comes in time.

        `req` is either a Request (its id set already: `fields`, `world_id` and `token` are
        then not taken), or an operation's name: its proto field name ("get_state"), with
        dashes ("get-state") or its message's name ("GetState"), whose message is built from
        `fields` by the proto's field names (nested messages as dicts or messages, repeated
        fields as sequences, enums by name or number) and sent on `world_id` with the token
        this client holds for it (or `token`). Tokens follow the reply as create_world,
        fork_world and claim keep theirs. A name that is no operation, or a field its message
        lacks, raises RobosimError INVALID_ARGUMENT naming the operations or the fields:

            c.call("get_state", world_id=wid, snapshot=True)
            c.call("step", world_id=wid, steps=10, parts=["STATE_PART_STATE"])"""
        if isinstance(req, str):
            name, msg = op_message(req, fields, self.endpoint)
            reply = self._call(name, msg, world_id, token, timeout)
            if isinstance(reply, pb.CreateWorldReply):
                self._keep(reply)
            elif name == "destroy_world":
                self._tokens.pop(int(world_id), None)
            return reply
        if fields or world_id or token is not None:
            raise TypeError("call(Request) takes no fields, world_id or token: the Request "
                            "carries them; call(name, world_id=..., **fields) builds one")
        sock = self._route(req) if self._sock is not None else None
        return self.call_bytes(req.SerializeToString(), req.id, req.WhichOneof("op"), timeout,
                               sock)

    def call_bytes(self, data: bytes, rid: int, op: Optional[str], timeout: Optional[float] = None,
                   sock: Any = None) -> Any:
        """call() for a Request already serialized (`data`, with id `rid`, operation `op`), on
        `sock` (None: the client's connection)."""
        if self._sock is None:
            raise RobosimError.from_name("FAILED_PRECONDITION", "the client is closed",
                                         self.endpoint)
        timeout = self.timeout if timeout is None else float(timeout)
        sock = sock or self._sock
        deadline = _now() + timeout
        self._send(sock, data, deadline, timeout, op or "request")
        return self._answer(self._response(self._recv(deadline, timeout, op, sock)), rid, op,
                            deadline, timeout, sock)

    def _response(self, data):
        """The Response in `data` (ProtocolError when it is none)."""
        try:
            return pb.Response.FromString(data)
        except Exception as exc:  # DecodeError
            raise ProtocolError("%s answered with bytes that are not a robosim.v1 Response "
                                "(%s)" % (self.endpoint, exc), self.endpoint)

    def _answer(self, resp, rid, op, deadline, timeout, sock=None):
        """The result message of the Response to request `rid`, `resp` the first one read:
        earlier ones (late answers to calls that timed out) are skipped, answers to pipelined
        StepBatches kept for recv_arrays, and the next read (on `sock`) before `deadline`; an
        Error raises RobosimError."""
        while resp.id != rid and resp.id != 0:
            if resp.id in self._inflight:
                self._arrived[resp.id] = resp
            resp = self._response(self._recv(deadline, timeout, op, sock))
        which = resp.WhichOneof("result")
        if which == "error":
            raise RobosimError(resp.error.code, resp.error.message, self.endpoint)
        if resp.id == 0 or which is None:
            raise ProtocolError("%s answered with an empty Response" % self.endpoint,
                                self.endpoint)
        return getattr(resp, which)

    def _recv(self, deadline, timeout, op=None, sock=None):
        """The next frame on `sock` (None: the client's connection) before `deadline`, by a
        blocking recv with RCVTIMEO (no poller: one system call fewer per request than poll
        then recv)."""
        left = deadline - _now()
        # the whole timeout on a first wait (the same value every call: no setsockopt)
        left_ms = int(timeout * 1000) if left >= timeout - 0.001 else max(1, int(left * 1000))
        sock = sock or self._sock
        self._set_rcvtimeo(sock, left_ms)
        try:
            return sock.recv()
        except zmq.Again:
            raise self._timeout_error(timeout, op or "request") from None

    def _send(self, sock, data, deadline, timeout, what):
        """Send `data` on `sock` before `deadline`: at once when the connection takes it (the
        common case), else once it does. A peer that drops the handshake (a CURVE server and a
        client it does not admit) leaves no connection to send on: that is a TimeoutError at
        the deadline, not a send that blocks for ever."""
        try:
            sock.send(data, zmq.NOBLOCK)
            return
        except zmq.Again:
            pass
        while True:
            left = deadline - _now()
            if left <= 0 or not sock.poll(max(1, int(left * 1000)), zmq.POLLOUT):
                raise self._timeout_error(timeout, what)
            try:
                sock.send(data, zmq.NOBLOCK)
                return
            except zmq.Again:
                continue

    def _timeout_error(self, timeout, what):
        """The TimeoutError of a call, naming the auto-started server's log (kept) if any."""
        if self.server_log:
            keep_log(self.server_log)
        return TimeoutError(self.endpoint, timeout, what, self.server_log)

    def _set_rcvtimeo(self, sock, ms):
        """RCVTIMEO on `sock`, set only when it changes (the same value every call)."""
        if self._rcvtimeos.get(sock) != ms:
            sock.setsockopt(zmq.RCVTIMEO, ms)
            self._rcvtimeos[sock] = ms

    def _call(self, op, msg, world_id=0, token=None, timeout=None):
        return self.call(self._request(op, msg, world_id, token), timeout)

    # -- tokens

    def token(self, world_id: int) -> str:
        """The controller token this client holds for world_id ("" if none)."""
        return self._tokens.get(int(world_id), "")

    def set_token(self, world_id: int, token: str) -> None:
        """Hold `token` for world_id (a token saved by another process)."""
        if token:
            self._tokens[int(world_id)] = token
        else:
            self._tokens.pop(int(world_id), None)

    # -- pipelined columnar StepBatches (EnvPool's send / recv)

    def arrays_request(self, world_ids: Any, steps: int = 1) -> ArraysRequest:
        """The encoder of StepBatch.arrays requests for these worlds with the tokens held now
        (encoded once: hand it to send_arrays for every request on the same worlds)."""
        ids = [int(w) for w in np.asarray(world_ids, dtype=np.uint64)]
        return ArraysRequest(ids, [self._tokens.get(w, "") for w in ids], steps)

    def _batch_socket(self, world_ids):
        """The socket for a StepBatch on these worlds: their shard's when they share one."""
        if not self._shard_of:
            return self._sock
        shards = {self._shard_of.get(int(w)) for w in world_ids}
        return (self._shard_socket(shards.pop()) if len(shards) == 1 else None) or self._sock

    @property
    def in_flight(self) -> int:
        """StepBatches sent by send_arrays whose answers recv_arrays has not returned yet."""
        return len(self._inflight)

    def send_arrays(self, world_ids: Any, actions: Any = None, commands: Any = None,
                    reset: Any = None, reset_seeds: Any = None, steps: int = 1,
                    request: Optional[ArraysRequest] = None) -> int:
        """Send a StepBatch.arrays (as step_arrays takes it) and return its request id without
        waiting for the answer: several may be in flight, and recv_arrays returns each answer
        as the server finishes it. request: arrays_request(world_ids, steps), built once for
        worlds stepped again and again (world_ids and steps are then not read). The server
        holds at most --max-inflight-per-client (4) of one client's requests parked at a time;
        more get RESOURCE_EXHAUSTED in their answer."""
        if self._sock is None:
            raise RobosimError.from_name("FAILED_PRECONDITION", "the client is closed",
                                         self.endpoint)
        if request is None:
            request = self.arrays_request(world_ids, steps)
        n = request.n
        for name, a in (("actions", actions), ("commands", commands)):
            if a is not None and (np.ndim(a) != 2 or len(a) != n):
                raise ValueError("%s has shape %s for %d worlds: (worlds, values) is needed"
                                 % (name, np.shape(a), n))
        for name, a in (("reset", reset), ("reset_seeds", reset_seeds)):
            if a is not None and np.shape(a) != (n,):
                raise ValueError("%s has shape %s for %d worlds" % (name, np.shape(a), n))
        rid = next(self._ids)
        data = request.encode(rid, actions, commands, reset, reset_seeds)
        sock = self._batch_socket(request.world_ids)
        self._send(sock, data, _now() + self.timeout, self.timeout, "step_batch")
        self._inflight[rid] = (sock, n)
        return rid

    def recv_arrays(self, timeout: Optional[float] = None) -> tuple:
        """(request id, columns) of the next StepBatch sent by send_arrays that the server
        answers, whichever that is. The columns are numpy arrays over the reply's bytes
        (read-only; copy or cast what you keep): "observation", "state", "sensors", "info",
        "randomized" (n_worlds x size, float64), "time", "reward" (float64), "terminated",
        "truncated" (bool), "codes", "events", "step_count" (uint64), "digests" (bytes, 32 per
        world), "info_keys", "randomized_items", the sizes, and "errors" {index: RobosimError}
        for worlds the server refused (codes not 0; the others ran). A batch refused as a whole
        raises RobosimError; FAILED_PRECONDITION when none is in flight."""
        if not self._inflight:
            raise RobosimError.from_name("FAILED_PRECONDITION", "recv_arrays with no StepBatch "
                                         "in flight (send_arrays first)", self.endpoint)
        if self._arrived:
            rid = next(iter(self._arrived))
            return rid, self._columns(rid, self._arrived.pop(rid))
        timeout = self.timeout if timeout is None else float(timeout)
        deadline = _now() + timeout
        while True:
            socks = {s for s, _ in self._inflight.values()}
            if len(socks) == 1:
                data = self._recv(deadline, timeout, "step_batch", socks.pop())
            else:
                data = self._recv_any(socks, deadline, timeout)
            rid = response_id(data)
            if rid is None:
                rid = self._response(data).id
            if rid in self._inflight:
                return rid, self._columns(rid, data)
            # else the late answer to a call that timed out: skipped

    def _recv_any(self, socks, deadline, timeout):
        """The next frame on any of `socks` before `deadline`."""
        poller = zmq.Poller()
        for s in socks:
            poller.register(s, zmq.POLLIN)
        left = deadline - _now()
        ready = dict(poller.poll(max(1, int(left * 1000)))) if left > 0 else {}
        for s in socks:
            if ready.get(s):
                return s.recv()
        raise self._timeout_error(timeout, "step_batch")

    def _columns(self, rid, reply):
        """The columns of the answer `reply` (bytes, or a Response read by another call) to
        the pipelined StepBatch `rid`."""
        _, n = self._inflight.pop(rid)
        if isinstance(reply, bytes):
            cols = read_arrays_reply(reply, n)
            if cols is not None:
                cols["errors"] = {}
                return cols
            reply = self._response(reply)
        which = reply.WhichOneof("result")
        if which == "error":
            raise RobosimError(reply.error.code, reply.error.message, self.endpoint)
        if which != "step_batch":
            raise ProtocolError("%s answered a StepBatch with a %s" % (self.endpoint, which),
                                self.endpoint)
        return arrays_columns(reply.step_batch.arrays, n, self.endpoint)


_now = time.monotonic
