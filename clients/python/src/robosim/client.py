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

import os
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import zmq

from . import curve
from ._connection import (DEFAULT_ENDPOINT, DEFAULT_TIMEOUT, LOOPBACK,  # noqa: F401
                          PROTOCOL_MAJOR, PROTOCOL_MINOR, Connection, _now, check_listening,
                          default_timeout, env_endpoint)
from ._messages import (STATE_PARTS, _commands, _f64, _floats, _param_spec,  # noqa: F401
                        _params, _samplers, _step_msg, _var, event_dict, jacobian_dict,
                        op_message, operations, randomize_samplers, spec_dict, state_dict,
                        step_arrays_dict, task_document_text, task_step_dict, world_info_dict)
from ._proto import pb
from ._wire import _varint, step_request_tail  # noqa: F401
from .errors import ProtocolError, RobosimError


class Client(Connection):
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
        Connection.__init__(self, endpoint, timeout, context,
                            curve.resolve(server_key, client_key_file))
        self.client_name = client_name
        self._shard_ports = []  # each shard's own port (HelloReply.shard_ports)
        self._routes: dict = {}    # op -> its pb.Route (HelloReply.routes; {}: a 1.2 server)
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
        return step_arrays_dict(r, len(ids), self.endpoint)

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
                if resp.id in self._inflight:  # a pipelined StepBatch's: for recv_arrays
                    self._arrived[resp.id] = resp
                continue
            if resp.WhichOneof("result") == "error":
                out[i] = RobosimError(resp.error.code, resp.error.message, self.endpoint)
            else:
                out[i] = state_dict(resp.step)
        return out
