"""robosim.Client: one method per protocol operation, plain Python / numpy values back.

    import robosim
    with robosim.Client("tcp://127.0.0.1:5555", timeout=5.0) as c:
        wid = c.create_world("finger", seed=1)
        c.set_force(wid, "finger", [0.5])
        state = c.step(wid, steps=100)
        print(state["entities"]["finger"]["state"])

Every server error raises robosim.RobosimError (code, code_name, message); no answer within
`timeout` raises robosim.TimeoutError naming the endpoint. The client keeps the controller
token of every world it creates, forks or claims and sends it with every request on that world
(tokens are "" on servers without roles, which works the same).
"""
from __future__ import annotations

import itertools
import os
import socket
import time
from typing import Any, Callable, Optional, Sequence, Union
from urllib.parse import urlsplit

import numpy as np
import zmq

from . import curve
from ._proto import pb
from ._closing import Closing
from ._logs import keep_log
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


# ---- messages -> plain values -------------------------------------------------------------

def _var(v):
    return {"name": v.name, "unit": v.unit, "lower": v.lower, "upper": v.upper,
            "size": v.size or 1, "doc": v.doc}


def _param_spec(p):
    return {"name": p.name, "unit": p.unit, "lower": p.lower, "upper": p.upper,
            "min_size": p.min_size, "max_size": p.max_size, "values": list(p.values),
            "doc": p.doc}


def world_info_dict(wi: Any) -> dict:
    return {"world_id": wi.world_id, "preset": wi.preset, "time": wi.time,
            "step_count": wi.step_count, "entities": list(wi.entities),
            "control_dt": wi.control_dt, "task": wi.task,
            "lease_remaining": wi.lease_remaining, "shard": wi.shard}


def _f64(values):
    """A protobuf repeated double as a float64 array (np.fromiter: about a third of
    np.array's time on a repeated field)."""
    return np.fromiter(values, np.float64, len(values))


def task_step_dict(ts: Any) -> dict:
    return {"observation": _f64(ts.observation),
            "reward": ts.reward, "terminated": ts.terminated, "truncated": ts.truncated,
            "info": dict(zip(ts.info_keys, ts.info_values))}


def event_dict(e: Any) -> dict:
    return {"entity": e.entity, "kind": e.kind, "time": e.time, "value": e.value,
            "before": list(e.before), "after": list(e.after)}


def task_document_text(document: Union[str, dict]) -> str:
    """A task document as the server takes it: JSON text (a dict is serialized)."""
    if isinstance(document, str):
        return document
    import json
    return json.dumps(document)


def state_dict(s: Any) -> dict:
    """A State message as a dict: world_id, time, step_count, entities {name: {kind, state,
    commands, sensors (numpy arrays), mode}}, events [dict], events_dropped, stats, seq,
    snapshot (bytes or None), task (dict or None: observation, reward, terminated, truncated,
    info), contacts [dict: entity, other, in_contact, had_contact, had_separation,
    had_penetration, point, normal, mean_force] (pairs whose contact_feedback is on), spec (dict
    or None, with a motion specification loaded: errors, outputs (numpy arrays in
    get_motion_spec's evaluators / controllers order), active_motion, commands). stats is None
    when a Step asked for parts without "stats". digest: the world's state digest (64 hex
    digits; equal digests certify bit-identical histories since creation or reset; "" from a
    server that predates it); seed: that of the world's last reset or creation. randomized:
    {item: value} of the parameters the world's last reset drew (create_world's randomize)."""
    spec = None
    if s.spec_errors or s.spec_outputs or s.spec_commands:
        spec = {"errors": _f64(s.spec_errors), "outputs": _f64(s.spec_outputs),
                "active_motion": s.spec_active_motion, "commands": _f64(s.spec_commands)}
    return {
        "world_id": s.world_id,
        "time": s.time,
        "step_count": s.step_count,
        "digest": s.digest.hex(),
        "seed": s.seed,
        "entities": {e.name: {"kind": e.kind, "state": _f64(e.state),
                              "commands": _f64(e.commands), "sensors": _f64(e.sensors),
                              "mode": e.mode} for e in s.entities},
        "events": [event_dict(e) for e in s.events] if s.events else [],
        "events_dropped": s.events_dropped,
        "stats": ({"internal_steps": s.stats.internal_steps, "rhs_evals": s.stats.rhs_evals,
                   "root_evals": s.stats.root_evals, "events": s.stats.events}
                  if s.HasField("stats") else None),
        "seq": s.seq,
        "snapshot": bytes(s.snapshot) if s.snapshot else None,
        "task": task_step_dict(s.task) if s.HasField("task") else None,
        "contacts": [{"entity": c.entity, "other": c.other, "in_contact": c.in_contact,
                      "had_contact": c.had_contact, "had_separation": c.had_separation,
                      "had_penetration": c.had_penetration, "point": list(c.point),
                      "normal": list(c.normal), "mean_force": list(c.mean_force)}
                     for c in s.contacts],
        "spec": spec,
        "randomized": {d.item: d.value for d in s.randomized},
        "jacobian": jacobian_dict(s.jacobian) if s.HasField("jacobian") else None,
    }


def jacobian_dict(j: Any) -> dict:
    """A Jacobian message as a dict: "state" (n x n), "commands" (n x m) numpy arrays, "params"
    {name: n-vector}, "differentiable" and, when it is False, "not_differentiable" (why; the
    arrays are then None)."""
    if not j.differentiable:
        return {"state": None, "commands": None, "params": None, "differentiable": False,
                "not_differentiable": j.not_differentiable}
    n, m, q = j.n, j.m, len(j.params)
    cols = np.array(j.param_columns, dtype=np.float64).reshape(n, q)
    return {"state": np.array(j.state, dtype=np.float64).reshape(n, n),
            "commands": np.array(j.commands, dtype=np.float64).reshape(n, m),
            "params": {name: cols[:, k].copy() for k, name in enumerate(j.params)},
            "differentiable": True, "not_differentiable": ""}


def spec_dict(sp: Any) -> dict:
    """A Spec message as a dict: world (WorldInfo), entities {name: {kind, state, actuators,
    sensors (lists of var dicts: name, unit, lower, upper, size, doc), params {name: dict},
    modes, event_kinds, base_pose [x m, y m, theta rad]: the entity's base frame in the world
    frame}}, world_params {name: dict}, task (dict or None: name, observation,
    action, max_episode_steps, reward, doc), randomize {item: "dist(a, b)"}: the parameters
    drawn at each reset."""
    out = {
        "world": world_info_dict(sp.world),
        "entities": {e.name: {"kind": e.kind,
                              "state": [_var(v) for v in e.state],
                              "actuators": [_var(v) for v in e.actuators],
                              "sensors": [_var(v) for v in e.sensors],
                              "params": {p.name: _param_spec(p) for p in e.params},
                              "modes": list(e.modes),
                              "event_kinds": list(e.event_kinds),
                              "base_pose": list(e.base_pose)} for e in sp.entities},
        "world_params": {p.name: _param_spec(p) for p in sp.world_params},
        "task": None,
        "randomize": {r.item: "%s(%r, %r)" % (r.dist, r.a, r.b) for r in sp.randomize},
    }
    if sp.HasField("task"):
        t = sp.task
        out["task"] = {"name": t.name, "observation": [_var(v) for v in t.observation],
                       "action": [_var(v) for v in t.action],
                       "max_episode_steps": t.max_episode_steps, "reward": t.reward,
                       "doc": t.doc}
    return out


def _params(params):
    """Parameters as Param messages. Accepts a dict {"entity.name": values} ("name" alone for
    world parameters such as control_dt) or a list of (entity, name, values)."""
    if not params:
        return []
    items = params.items() if isinstance(params, dict) else [((e, n), v) for e, n, v in params]
    out = []
    for key, values in items:
        if isinstance(key, tuple):
            entity, name = key
        elif "." in key:
            entity, name = key.split(".", 1)
        else:
            entity, name = "", key
        vals = [float(v) for v in np.atleast_1d(np.asarray(values, dtype=np.float64))]
        out.append(pb.Param(entity=entity, name=name, values=vals))
    return out


def operations() -> dict:
    """The protocol's operations (Request's `op` oneof) as {name: message class}, in proto
    order: what Client.call takes by name, read from the generated descriptors."""
    req = pb.Request()
    return {f.name: type(getattr(req, f.name))
            for f in pb.Request.DESCRIPTOR.oneofs_by_name["op"].fields}


def op_message(op: str, fields: dict, endpoint: Optional[str] = None) -> Any:
    """(name, message) of operation `op` (its field name, dashed name or message name) with
    `fields` set; RobosimError INVALID_ARGUMENT naming the operations or the message's fields
    when `op` or a field is unknown or a value does not fit its field."""
    ops = operations()
    name = next((n for n, cls in ops.items()
                 if op in (n, n.replace("_", "-"), cls.DESCRIPTOR.name)), None)
    if name is None:
        raise RobosimError.from_name(
            "INVALID_ARGUMENT", "no operation %r; the operations: %s" % (op, ", ".join(ops)),
            endpoint)
    cls = ops[name]
    known = [f.name for f in cls.DESCRIPTOR.fields]
    unknown = [k for k in fields if k not in known]
    if unknown:
        raise RobosimError.from_name(
            "INVALID_ARGUMENT", "%s has no field %s; its fields: %s"
            % (cls.DESCRIPTOR.name, ", ".join(repr(k) for k in unknown),
               ", ".join(known) or "none"), endpoint)
    for oneof in cls.DESCRIPTOR.oneofs:
        given = [f.name for f in oneof.fields if f.name in fields]
        if len(given) > 1:
            raise RobosimError.from_name(
                "INVALID_ARGUMENT", "%s: %s are alternatives (oneof %s); give one"
                % (cls.DESCRIPTOR.name, " and ".join(repr(g) for g in given), oneof.name),
                endpoint)
    try:
        return name, cls(**fields)
    except (TypeError, ValueError) as exc:
        raise RobosimError.from_name(
            "INVALID_ARGUMENT", "%s(%s): %s" % (cls.DESCRIPTOR.name, ", ".join(fields), exc),
            endpoint) from None


def _floats(values):
    return [float(v) for v in np.asarray(values, dtype=np.float64).reshape(-1)]


def _commands(commands):
    """{entity: values} or [(entity, values)] -> [ActuatorCommand]."""
    if not commands:
        return []
    items = commands.items() if isinstance(commands, dict) else commands
    return [pb.ActuatorCommand(entity=e, values=_floats(v)) for e, v in items]


def _varint(n):
    """n (>= 0) as a protobuf varint; the request ids' one- to three-byte forms without a
    loop (step_request_tail runs per step)."""
    if n < 0x80:
        return bytes((n,))
    if n < 0x4000:
        return bytes((n & 0x7F | 0x80, n >> 7))
    if n < 0x200000:
        return bytes((n & 0x7F | 0x80, (n >> 7) & 0x7F | 0x80, n >> 14))
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_STEP_FIELD = b"\x82\x01"   # Request.step: field 16, length-delimited
_ONE_STEP = b"\x10\x01"     # Step.steps = 1
_ACTION_FIELD = b"\x22"      # Step.action: field 4, packed doubles
_STEP_HEADS: dict = {}       # action bytes -> the bytes before them (step_request_tail)


def step_request_tail(rid: int, action: Any) -> bytes:
    """The bytes of Request{id: rid, step: Step{steps: 1, action}} in protobuf's wire format,
    to follow a serialized Request holding world_id and token (serialized messages concatenate
    into their merge). Built directly, without message objects: the single environment's step
    is the client's hottest path (tests/python/test_client.py checks it parses to the Request
    protobuf builds)."""
    packed = action if type(action) is bytes else np.ascontiguousarray(action,
                                                                        dtype="<f8").tobytes()
    head = _STEP_HEADS.get(len(packed))
    if head is None:  # Request.step's tag and length, Step.steps, Step.action's tag and length
        body = _ONE_STEP + _ACTION_FIELD + _varint(len(packed))
        head = _STEP_HEADS[len(packed)] = _STEP_FIELD + _varint(len(body) + len(packed)) + body
    return b"\x08" + _varint(rid) + head + packed


def _samplers(samplers):
    """(item, dist, a, b) tuples from a dict or "item ~ dist(a, b)" strings (a, b numbers or
    [-]pi)."""
    import math
    import re

    def num(v):
        v = v.strip() if isinstance(v, str) else v
        if isinstance(v, str) and v.lstrip("+-") == "pi":
            return -math.pi if v.startswith("-") else math.pi
        return float(v)

    out = []
    items = samplers.items() if isinstance(samplers, dict) else [(s, None) for s in samplers]
    for item, spec in items:
        if spec is None:
            m = re.fullmatch(r"\s*(\S+)\s*~\s*(\w+)\s*\(([^,]+),([^)]+)\)\s*", item)
            if not m:
                raise ValueError("sampler %r should look like 'arm.theta0[0] ~ uniform(-pi, pi)'"
                                 % item)
            item, spec = m.group(1), (m.group(2), m.group(3), m.group(4))
        dist, a, b = spec
        out.append((item, dist, num(a), num(b)))
    return out


def randomize_samplers(randomize: Optional[dict]) -> list:
    """Sampler messages for randomized parameters: {"finger.static_friction": "uniform(0.5,
    1.5)", "arm.link_mass[1]": ("normal", 1.0, 0.1), ...} or strings "item ~ dist(a, b)"
    (the Monte Carlo samplers' syntax)."""
    if not randomize:
        return []
    flat = []
    items = randomize.items() if isinstance(randomize, dict) else [(t, None) for t in randomize]
    for item, v in items:
        flat.extend(_samplers(["%s ~ %s" % (item, v)] if isinstance(v, str)
                              else [item] if v is None else {item: v}))
    return [pb.Sampler(item=item, dist=dist, a=a, b=b) for item, dist, a, b in flat]


# Step.parts by name (protocol 1.2): what a Step's reply carries besides time and step_count.
STATE_PARTS = {"state": 1, "sensors": 2, "events": 3, "task": 4, "stats": 5}


def _step_msg(steps=None, duration=None, commands=None, action=None, parts=None,
              jacobian=False, jacobian_params=None):
    if steps is not None and duration is not None:
        raise ValueError("give steps or duration, not both (Step.length is a oneof)")
    msg = pb.Step(commands=_commands(commands), jacobian=bool(jacobian or jacobian_params),
                  jacobian_params=list(jacobian_params or []))
    if duration is not None:
        msg.duration = float(duration)
    else:
        msg.steps = 1 if steps is None else int(steps)
    if action is not None:
        msg.action.extend(_floats(action))
    if parts is not None:
        unknown = [p for p in parts if p not in STATE_PARTS]
        if unknown:
            raise ValueError(f"unknown Step parts {unknown}; known: {sorted(STATE_PARTS)}")
        msg.parts.extend(STATE_PARTS[p] for p in parts)
    return msg


# ---- the client ---------------------------------------------------------------------------

class Client(Closing):
    """A connection to one robosim-server (a ZeroMQ DEALER socket).

    endpoint: "tcp://host:port" (None: $ROBOSIM_ENDPOINT, else tcp://127.0.0.1:5555); with
    $ROBOSIM_WORLD and $ROBOSIM_TOKEN set (as robosim-cli create prints them), the client holds
    that world's controller token. timeout: seconds each call waits for its reply. hello: say
    Hello first (refused servers raise RobosimError VERSION_MISMATCH at once; nothing listening
    on a local port raises UNAVAILABLE at once).
    server_key, client_key_file: CurveZMQ keys for a server run with --curve-secret-file
    (robosim.curve: the server's public key or its .key file, and this client's .key_secret
    file; default $ROBOSIM_SERVER_KEY and $ROBOSIM_CLIENT_KEY_FILE, "" for none). A CURVE
    server answers nothing to a client it does not admit: that is a TimeoutError.
    one_connection: every request by the one connection. By default, with a server of several
    shards (--shards) that lists each shard's own port in Hello, the requests for the worlds
    this client controls go straight to their shard's port (probed with Hello once, at most
    2 s; a port that does not answer is not tried again)."""

    def __init__(self, endpoint: Optional[str] = None, timeout: Optional[float] = None,
                 hello: bool = True, client_name: str = "robosim-python",
                 context: Optional[zmq.Context] = None, server_key: Optional[str] = None,
                 client_key_file: Optional[str] = None, one_connection: bool = False) -> None:
        endpoint = endpoint or env_endpoint() or DEFAULT_ENDPOINT
        if hello:
            check_listening(endpoint)
        self.endpoint = endpoint
        self.timeout = default_timeout() if timeout is None else float(timeout)
        # the log file of the server this process started for this client (LocalServer), named
        # in a TimeoutError and then kept
        self.server_log: Optional[str] = None
        self.client_name = client_name
        keys = curve.resolve(server_key, client_key_file)
        self._ctx = context or zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._rcvtimeos: dict = {}  # socket -> the RCVTIMEO last set on it
        self._keys = keys
        self._shard_ports = []  # each shard's own port (HelloReply.shard_ports)
        self._shard_of: dict = {}  # world id -> its shard, for the worlds this client controls
        self._routes: dict = {}    # op -> its pb.Route (HelloReply.routes; {}: a 1.2 server)
        self._links: dict = {}     # shard -> its socket, or None: its port does not answer
        try:
            curve.apply(self._sock, keys)
            self._sock.connect(endpoint)
        except zmq.ZMQError as exc:
            self._sock.close()
            raise RobosimError.from_name("INVALID_ARGUMENT",
                                         "cannot connect to %r: %s" % (endpoint, exc), endpoint)
        self._ids = itertools.count(1)
        self._tokens = {}
        # `eval "$(robosim-cli create ...)"` exports ROBOSIM_WORLD and ROBOSIM_TOKEN: hold it
        world, token = os.environ.get("ROBOSIM_WORLD"), os.environ.get("ROBOSIM_TOKEN")
        if world and token and world.isdigit():
            self._tokens[int(world)] = token
        self._heads: dict = {}  # world id -> (token, its serialized Request head): step_msg
        self.server: Any = None
        if hello:
            self.server = self.hello()
            if (not one_connection and len(self.server["shard_ports"]) > 1
                    and endpoint.startswith("tcp://")):
                self._shard_ports = self.server["shard_ports"]
                self._routes = self.server["routes"]

    # -- plumbing

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close(0)
            self._sock = None
        for sock in self._links.values():
            if sock is not None:
                sock.close(0)
        self._links.clear()
        self._rcvtimeos.clear()

    # -- straight to a world's shard: a server of several shards serves any world on any
    # connection (passing the request between its threads); the worlds this client controls
    # are reached at their shard's own port instead

    def _shard_socket(self, k):
        """The connection to shard k's own port, or None (use the first connection)."""
        if k is None or k >= len(self._shard_ports):
            return None
        if k in self._links:
            return self._links[k]
        self._links[k] = None
        host = self.endpoint[len("tcp://"):].rsplit(":", 1)[0]
        sock = self._ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            curve.apply(sock, self._keys)
            sock.connect("tcp://%s:%d" % (host, self._shard_ports[k]))
            rid = next(self._ids)
            hello = pb.Request(id=rid, hello=pb.Hello(major=PROTOCOL_MAJOR,
                                                      minor=PROTOCOL_MINOR))
            deadline = _now() + min(2.0, self.timeout)
            sock.send(hello.SerializeToString(), zmq.NOBLOCK)
            while True:
                left = deadline - _now()
                if left <= 0 or not sock.poll(max(1, int(left * 1000)), zmq.POLLIN):
                    raise zmq.Again()
                resp = pb.Response.FromString(sock.recv())
                if resp.id == rid and resp.HasField("hello"):
                    break
        except Exception:  # no answer, refused, or not a Response: keep to the one connection
            sock.close(0)
            return None
        self._links[k] = sock
        return sock

    def _route(self, req):
        """The socket for Request `req`, by its op's route in the server's Hello: the shard of
        the world it names (ROUTE_WORLD), of all the worlds a StepBatch names when they share
        one (ROUTE_WORLDS), else the first connection. A 1.2 server's Hello has no routes: its
        StepBatch went by its worlds and every other op by Request.world_id."""
        if not self._shard_ports:
            return self._sock
        op = req.WhichOneof("op")
        route = self._routes.get(op, pb.ROUTE_WORLDS if op == "step_batch" else pb.ROUTE_WORLD)
        k = None
        if route == pb.ROUTE_WORLDS:
            b = getattr(req, op)
            ids = (b.arrays.world_ids if b.WhichOneof("form") == "arrays"
                   else [it.world_id for it in b.items.items])
            shards = {self._shard_of.get(w) for w in ids}
            k = shards.pop() if len(shards) == 1 else None
        elif route == pb.ROUTE_WORLD:
            k = self._shard_of.get(req.world_id)
        return self._shard_socket(k) or self._sock

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
        earlier ones (late answers to calls that timed out) are skipped and the next read
        (on `sock`) before `deadline`; an Error raises RobosimError."""
        while resp.id != rid and resp.id != 0:
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

    def _keep(self, reply):
        wid = reply.world.world_id
        self._tokens[wid] = reply.token
        if self._shard_ports:
            self._shard_of[wid] = reply.world.shard
        return wid

    # -- operations

    def hello(self, major: int = PROTOCOL_MAJOR, minor: int = PROTOCOL_MINOR) -> dict:
        """Hello: the server's protocol version, release, capabilities, presets, tasks, stream
        endpoint and build fingerprint ("build": what its bits depend on: commit, compiler,
        floating-point flags, SUNDIALS, architecture, math library), as a dict. A server of
        another major refuses (VERSION_MISMATCH)."""
        r = self._call("hello", pb.Hello(major=major, minor=minor, client_name=self.client_name))
        if r.major != PROTOCOL_MAJOR:
            raise RobosimError.from_name(
                "VERSION_MISMATCH", "%s speaks protocol %d.%d; this client speaks %d.%d"
                % (self.endpoint, r.major, r.minor, PROTOCOL_MAJOR, PROTOCOL_MINOR),
                self.endpoint)
        b = r.build
        return {"major": r.major, "minor": r.minor, "server_version": r.server_version,
                "capabilities": list(r.capabilities), "presets": list(r.presets),
                "tasks": list(r.tasks), "stream_endpoint": r.stream_endpoint,
                "shard_ports": list(r.shard_ports),
                "routes": {route.op: route.route for route in r.routes},
                "build": {"version": b.version, "commit": b.commit, "compiler": b.compiler,
                          "fp_flags": b.fp_flags, "sundials": b.sundials, "arch": b.arch,
                          "libm": b.libm, "build_type": b.build_type}}

    def list_worlds(self) -> list[dict]:
        """The worlds on the server, as WorldInfo dicts."""
        return [world_info_dict(w) for w in self._call("list_worlds", pb.ListWorlds()).worlds]

    def create_world(self, preset: str = "", params: Optional[dict] = None, seed: int = 0,
                     task: str = "", task_document: Union[str, dict, None] = None,
                     randomize: Optional[dict] = None) -> int:
        """Create a world (from a preset, or a task's own preset) and return its id; the
        controller token is kept. params: {"entity.name": values} or [(entity, name, values)].
        task_document: a declared task (JSON text or a dict) registered on the server and run
        (task may then be "" or its name).
        randomize: parameters drawn at every reset from the reset's seed, e.g.
        {"finger.static_friction": "uniform(0.5, 1.5)", "finger.object_mass": "normal(1, 0.1)"}
        (see randomize_samplers); each reset's draws are in its State["randomized"]."""
        r = self._call("create_world", pb.CreateWorld(
            preset=preset, params=_params(params), seed=int(seed), task=task,
            task_document=task_document_text(task_document) if task_document else "",
            randomize=randomize_samplers(randomize)))
        return self._keep(r)

    def register_task(self, document: Union[str, dict]) -> str:
        """Register a declared task (a JSON task document, text or dict) on the server; returns
        its name, which create_world(task=...) then takes. Errors name the bad item
        (RobosimError); the same document again is accepted."""
        r = self._call("register_task", pb.RegisterTask(document=task_document_text(document)))
        return r.name

    def destroy_world(self, world_id: int) -> None:
        self._call("destroy_world", pb.DestroyWorld(), world_id)
        self._tokens.pop(int(world_id), None)
        self._shard_of.pop(int(world_id), None)

    def get_spec(self, world_id: int) -> dict:
        """The world's Spec as a dict (see spec_dict)."""
        return spec_dict(self._call("get_spec", pb.GetSpec(), world_id))

    def reset(self, world_id: int, seed: Optional[int] = None,
              randomize: Optional[dict] = None) -> dict:
        """Reset (reseeded when seed is given, else with the world's last seed); the State.
        randomize: replace the world's randomized parameters before this reset draws them (as
        create_world's); {} removes them."""
        msg = pb.Reset() if seed is None else pb.Reset(seed=int(seed))
        if randomize is not None:
            if randomize:
                msg.randomize.extend(randomize_samplers(randomize))
            else:
                msg.randomize_clear = True
        return state_dict(self._call("reset", msg, world_id))

    def step(self, world_id: int, steps: Optional[int] = None,
             duration: Optional[float] = None, commands: Optional[dict] = None,
             action: Any = None, parts: Any = None, jacobian: bool = False,
             jacobian_params: Optional[list] = None) -> dict:
        """Advance `steps` control steps (default 1) or `duration` seconds, after applying
        `commands` ({entity: values}) or, for a task world, `action`; the State. parts: the
        parts of the State wanted (names of STATE_PARTS: "state", "sensors", "events", "task",
        "stats"); None for all; the others come back empty. jacobian: also the Step's
        derivatives, State["jacobian"] (see jacobian_dict): the state after it with respect to
        the state before it ("state", n x n, the entities' states in spec order), the commands
        ("commands", n x m, all actuators in spec order, held over the Step) and the parameters
        named in jacobian_params ("params", {"finger.static_friction": n-vector, ...}),
        through the Step's contact events (hybrid formulation)."""
        if (action is not None and commands is None and duration is None and steps in (None, 1)
                and parts is None and not jacobian and not jacobian_params):
            return state_dict(self.step_msg(world_id, action))  # the common case, fast
        msg = _step_msg(steps, duration, commands, action, parts, jacobian, jacobian_params)
        return state_dict(self._call("step", msg, world_id))

    def step_msg(self, world_id: int, action: Any) -> Any:
        """One control step of a task world with `action` (values, or bytes already packed as
        little-endian doubles); the State *message* (robosim.v1.State), undecoded: the
        environments read only what they need."""
        wid = int(world_id)
        token = self._tokens.get(wid, "")
        head = self._heads.get(wid)
        if head is None or head[0] != token:
            head = self._heads[wid] = (token, pb.Request(world_id=wid,
                                                         token=token).SerializeToString())
        rid = next(self._ids)
        return self._step_call(head[1] + step_request_tail(rid, action), rid,
                               self._shard_of.get(wid))

    def stepper(self, world_id: int) -> Callable[[Any], Any]:
        """step_msg bound to one world: a function of the action (values, or packed bytes)
        returning the State message, with the per-call work of finding the world's request
        head done once (the token is still read at every call, so set_token and claims take
        effect). The single environment steps through it."""
        wid = int(world_id)
        tokens, ids, call = self._tokens, self._ids, self._step_call
        head = [None, b""]  # the token the request head was built for, the head's bytes

        shard_of = self._shard_of

        def step(action):
            token = tokens.get(wid, "")
            if token != head[0]:
                head[:] = token, pb.Request(world_id=wid, token=token).SerializeToString()
            rid = next(ids)
            return call(head[1] + step_request_tail(rid, action), rid, shard_of.get(wid))

        return step

    def _step_call(self, data, rid, shard=None):
        """call_bytes() for a Step request (its world on `shard`, None: unknown), its common
        case in fewest operations: the reply to this request holding a State (anything else
        goes the general way, _answer)."""
        if self._sock is None:
            raise RobosimError.from_name("FAILED_PRECONDITION", "the client is closed",
                                         self.endpoint)
        timeout = self.timeout
        sock = self._shard_socket(shard) or self._sock
        self._set_rcvtimeo(sock, int(timeout * 1000))
        deadline = _now() + timeout
        self._send(sock, data, deadline, timeout, "step")
        try:
            reply = sock.recv()
        except zmq.Again:
            raise self._timeout_error(timeout, "step") from None
        try:
            resp = pb.Response.FromString(reply)
        except Exception:  # DecodeError: reported as call_bytes reports it
            resp = self._response(reply)
        if resp.id == rid and resp.HasField("step"):
            return resp.step
        return self._answer(resp, rid, "step", deadline, timeout, sock)

    def reset_msg(self, world_id: int, seed: int) -> Any:
        """Reset reseeded with `seed`; the State message, undecoded."""
        return self._call("reset", pb.Reset(seed=int(seed)), world_id)

    def get_state(self, world_id: int, snapshot: bool = False) -> dict:
        """The State (with State["snapshot"] bytes when snapshot=True)."""
        return state_dict(self._call("get_state", pb.GetState(snapshot=bool(snapshot)),
                                     world_id))

    def set_force(self, world_id: int, entity: str, values: Any) -> None:
        self._call("set_force", pb.SetForce(entity=entity, values=_floats(values)), world_id)

    def apply_wrench(self, world_id: int, entity: str, body: str, values: Any) -> None:
        """An external wrench on `body` of `entity` during the next control step only: the
        finger's "finger" ([force N]), the serial arm's "end_effector" ([fx, fy, tau_z]),
        "link1" and "link2" ([tau_z])."""
        self._call("apply_wrench", pb.ApplyWrench(entity=entity, body=body,
                                                  values=_floats(values)), world_id)

    def set_params(self, world_id: int, params: dict) -> None:
        self._call("set_params", pb.SetParams(params=_params(params)), world_id)

    def set_schedule(self, world_id: int, entity: str, actuator: str, times: Any,
                     values: Any) -> None:
        self._call("set_schedule", pb.SetSchedule(entity=entity, actuator=int(actuator),
                                                  times=_floats(times), values=_floats(values)),
                   world_id)

    def set_target(self, world_id: int, entity: str, target: Any) -> None:
        self._call("set_target", pb.SetTarget(entity=entity, target=_floats(target)), world_id)

    def get_workspace(self, world_id: int, entity: str, samples: int = 0,
                      query: Any = None) -> dict:
        """{"boundary": (n, 2) array, "reachable": bool array, one per query point}."""
        q = [] if query is None else _floats(query)
        r = self._call("get_workspace", pb.GetWorkspace(entity=entity, samples=int(samples),
                                                        query=q), world_id)
        return {"boundary": np.array(r.boundary, dtype=np.float64).reshape(-1, 2),
                "reachable": np.array(r.reachable, dtype=bool)}

    def load_motion_spec(self, world_id: int, document: Union[str, dict, list, None] = None,
                         path: Union[str, os.PathLike, None] = None) -> None:
        """Load a JSON-LD motion specification on the world, replacing any: the text
        `document` (str, or a dict / list to serialize) or the file at `path`. It runs at every
        control step from the next step on; errors name the entity (RobosimError). A path
        "examples/specs/<name>" that is no file here is the package's copy of that example
        (robosim.example_spec)."""
        if path is not None:
            from .specs import resolve_spec_path
            with open(resolve_spec_path(os.fspath(path)), encoding="utf-8") as f:
                document = f.read()
        if not isinstance(document, str):
            import json
            document = json.dumps(document)
        self._call("load_motion_spec", pb.LoadMotionSpec(document=document), world_id)

    def get_motion_spec(self, world_id: int) -> dict:
        """The specification in force: {loaded, document, evaluators, controllers,
        active_motion, replaces_commands}; loaded False when there is none."""
        r = self._call("get_motion_spec", pb.GetMotionSpec(), world_id)
        return {"loaded": r.loaded, "document": r.document, "evaluators": list(r.evaluators),
                "controllers": list(r.controllers), "active_motion": r.active_motion,
                "replaces_commands": r.replaces_commands}

    def clear_motion_spec(self, world_id: int) -> None:
        """Remove the world's motion specification."""
        self._call("clear_motion_spec", pb.ClearMotionSpec(), world_id)

    def set_state(self, world_id: int, snapshot: bytes) -> dict:
        """Restore a snapshot (bytes from get_state(snapshot=True)); the State."""
        return state_dict(self._call("set_state", pb.SetState(snapshot=snapshot), world_id))

    def fork_world(self, world_id: int, snapshot: Optional[bytes] = None) -> int:
        """A new world from world_id's state (or `snapshot`); returns its id, token kept."""
        r = self._call("fork_world", pb.ForkWorld(snapshot=snapshot or b""), world_id)
        return self._keep(r)

    def get_history(self, world_id: int, from_seq: int = 1, max_frames: int = 0) -> Any:
        """The observer stream's kept frames of a world from seq `from_seq` on: the
        GetHistoryReply (frames: serialized StreamFrames; first_seq, last_seq, dropped, more)."""
        return self._call("get_history", pb.GetHistory(from_seq=int(from_seq),
                                                       max_frames=int(max_frames)), world_id)

    def claim(self, world_id: int) -> str:
        """Take control of a world whose controller's lease lapsed; the new token is kept."""
        r = self._call("claim", pb.Claim(), world_id)
        self._keep(r)
        return r.token

    def step_batch(self, items: Sequence[dict], timeout: Optional[float] = None,
                   raw: bool = False) -> list:
        """Step many worlds in one request. items: dicts with world_id and optionally action,
        commands, steps, duration, parts (the per-item form of StepBatch: for worlds of
        different shapes or step counts, or to get each world's events; step_arrays is the
        columnar form the vector environments use). Returns one entry per item, in order: the State dict, or a
        RobosimError instance for an item the server refused (the others still ran). With
        raw=True the BatchResult messages are returned as they are."""
        msg = pb.StepBatch()
        for it in items:
            wid = int(it["world_id"])
            msg.items.items.add(world_id=wid, token=self._tokens.get(wid, ""),
                                step=_step_msg(it.get("steps"), it.get("duration"),
                                               it.get("commands"), it.get("action"),
                                               it.get("parts")))
        r = self._call("step_batch", msg, timeout=timeout)
        if raw:
            return list(r.results)
        out: list = []
        for res in r.results:
            if res.WhichOneof("result") == "error":
                out.append(RobosimError(res.error.code, res.error.message, self.endpoint))
            else:
                out.append(state_dict(res.state))
        return out

    def monte_carlo(self, world_id: int, runs: int, duration: float, samplers: Any,
                    returns: Sequence[str], seed: int = 0, first_run: int = 0,
                    timeout: Optional[float] = None) -> dict:
        """Monte Carlo runs of a world on the server's workers (Klamp't's monteCarloSim; the
        world is not changed). samplers: {"arm.theta0[0]": ("uniform", -pi, pi), ...} or
        strings "arm.theta0[0] ~ uniform(-pi, pi)" / "finger.finger_x0 ~ normal(0.1, 0.01)"
        (normal: mean, deviation); returns: items "entity.state_or_sensor". Run i starts from
        the world reset (seed + i) with its parameters and held commands and the draws of
        (seed, i); this request runs first_run .. first_run + runs - 1 (split a large N over
        requests this way to stay within the server's limits, with the same numbers).
        Returns {"initial": (runs, samplers) array of the draws, "final": (runs, returns)
        array, "samplers": [...], "returns": [...], "time": each run's end time}."""
        msg = pb.MonteCarlo(runs=int(runs), seed=int(seed), duration=float(duration),
                            returns=list(returns), first_run=int(first_run))
        for item, dist, a, b in _samplers(samplers):
            msg.samplers.add(item=item, dist=dist, a=a, b=b)
        r = self._call("monte_carlo", msg, world_id, timeout=timeout)
        ns, nr = len(r.samplers), len(r.returns)
        return {"initial": np.array(r.initial, dtype=np.float64).reshape(r.runs, ns),
                "final": np.array(r.final, dtype=np.float64).reshape(r.runs, nr),
                "samplers": list(r.samplers), "returns": list(r.returns), "time": r.time}

    def step_arrays(self, world_ids: Any, commands: Any = None, actions: Any = None,
                    steps: int = 1, timeout: Optional[float] = None, reset: Any = None,
                    reset_seeds: Any = None) -> Any:
        """Step many worlds of one shape (the same preset and task) in the columnar form
        (StepBatch.arrays, capability "step_batch.arrays"): no message per world either way.
        commands: array (n_worlds, n_actuators), each row a world's actuator commands in spec
        order (all entities), or None to hold them; actions: (n_worlds, action size) for task
        worlds. Returns a dict of numpy arrays, row i for world_ids[i]: code (0 = OK), time,
        step_count, digest (hex per world), events, state, sensors and, for task worlds, observation, reward,
        terminated, truncated, info (n_worlds, len(info_keys)) and info_keys (the task's info
        figures); rows of a world whose code is not 0 are NaN and errors maps its index to a
        RobosimError. reset: booleans, one per world (capability "step_batch.arrays.reset"):
        those worlds start a new episode instead of stepping, reseeded with reset_seeds[i] when
        given. A batch refused as a whole raises RobosimError."""
        ids = world_ids.tolist() if isinstance(world_ids, np.ndarray) else [int(w) for w in world_ids]
        arr = pb.BatchArrays(world_ids=ids, tokens=[self._tokens.get(w, "") for w in ids],
                             steps=int(steps))
        if commands is not None:
            arr.commands.extend(np.asarray(commands, dtype=np.float64).ravel().tolist())
        if actions is not None:
            arr.actions.extend(np.asarray(actions, dtype=np.float64).ravel().tolist())
        if reset is not None:
            arr.reset.extend(np.asarray(reset, dtype=bool).tolist())
        if reset_seeds is not None:
            arr.reset_seeds.extend(int(s) for s in reset_seeds)
        r = self._call("step_batch", pb.StepBatch(arrays=arr), timeout=timeout).arrays
        n = len(ids)

        def rows(values, width):
            return np.array(values, dtype=np.float64).reshape(n, width)

        out = {"code": np.array(r.codes, dtype=np.int64),
               "time": np.array(r.time, dtype=np.float64),
               "step_count": np.array(r.step_count, dtype=np.uint64),
               "digest": [r.digests[32 * i:32 * i + 32].hex() for i in range(n)]
                         if len(r.digests) == 32 * n else [""] * n,
               "events": np.array(r.events, dtype=np.int64),
               "randomized_items": list(r.randomized_items),
               "randomized": rows(r.randomized, len(r.randomized_items)),
               "state": rows(r.state, r.state_size),
               "sensors": rows(r.sensors, r.sensor_size),
               "errors": {e.index: RobosimError(e.error.code, e.error.message, self.endpoint)
                          for e in r.errors}}
        if r.observation_size:
            out.update(observation=rows(r.observation, r.observation_size),
                       reward=np.array(r.reward, dtype=np.float64),
                       terminated=np.array(r.terminated, dtype=bool),
                       truncated=np.array(r.truncated, dtype=bool),
                       info_keys=list(r.info_keys), info=rows(r.info, r.info_size))
        return out

    def step_pipelined(self, items: Sequence[dict], timeout: Optional[float] = None) -> list:
        """As step_batch, for servers without StepBatch: one Step request per item, all sent
        before the first reply is read (replies come back in request order)."""
        timeout = self.timeout if timeout is None else float(timeout)
        reqs = [self._request("step", _step_msg(it.get("steps"), it.get("duration"),
                                                it.get("commands"), it.get("action")),
                              it["world_id"]) for it in items]
        deadline = _now() + timeout
        # all on the worlds' shard's own port when they share one (as a single Step goes), so
        # no shard holds them on the way; else on the first connection
        socks = {id(s): s for s in (self._route(rq) for rq in reqs)}
        sock = next(iter(socks.values())) if len(socks) == 1 else self._sock
        for rq in reqs:
            self._send(sock, rq.SerializeToString(), deadline, timeout, "step")
        pending = {rq.id: i for i, rq in enumerate(reqs)}
        out: list = [None] * len(reqs)
        while pending:
            data = self._recv(deadline, timeout, "step", sock)
            try:
                resp = pb.Response.FromString(data)
            except Exception as exc:
                raise ProtocolError("%s answered with bytes that are not a robosim.v1 Response "
                                    "(%s)" % (self.endpoint, exc), self.endpoint)
            i = pending.pop(resp.id, None)
            if i is None:
                continue
            if resp.WhichOneof("result") == "error":
                out[i] = RobosimError(resp.error.code, resp.error.message, self.endpoint)
            else:
                out[i] = state_dict(resp.step)
        return out


_now = time.monotonic
