"""The protocol's messages as plain Python / numpy values and back: State, Spec, WorldInfo,
Jacobian and the columnar StepBatch reply as dicts; parameters, commands, samplers and Step
messages built from dicts and sequences; any operation's message by name (op_message)."""
from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from ._proto import pb
from .errors import RobosimError


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


# Step.parts by name (protocol 1.2): what a Step's reply carries besides time and step_count,
# read from robosim.v1.StatePart ("STATE_PART_SENSORS" -> "sensors")
STATE_PARTS = {v.name[len("STATE_PART_"):].lower(): v.number
               for v in pb.StatePart.DESCRIPTOR.values if v.number}


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



def step_arrays_dict(r: Any, n: int, endpoint: Optional[str] = None) -> dict:
    """A BatchArraysReply of n worlds as Client.step_arrays returns it (see there)."""

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
           "errors": {e.index: RobosimError(e.error.code, e.error.message, endpoint)
                      for e in r.errors}}
    if r.observation_size:
        out.update(observation=rows(r.observation, r.observation_size),
                   reward=np.array(r.reward, dtype=np.float64),
                   terminated=np.array(r.terminated, dtype=bool),
                   truncated=np.array(r.truncated, dtype=bool),
                   info_keys=list(r.info_keys), info=rows(r.info, r.info_size))
    return out


def arrays_columns(r: Any, n: int, endpoint: Optional[str] = None) -> dict:
    """A BatchArraysReply of n worlds in the form robosim._wire.read_arrays_reply gives (the
    columns by their proto names, 2-D ones shaped (n, size)) plus "errors" {index:
    RobosimError}: what Client.recv_arrays returns when the reply took the general path."""
    def f64(values, width=None):
        a = np.array(values, dtype=np.float64)
        return a if width is None else a.reshape(n, width)

    return {"state_size": r.state_size, "sensor_size": r.sensor_size,
            "observation_size": r.observation_size, "info_size": r.info_size,
            "time": f64(r.time), "state": f64(r.state, r.state_size),
            "sensors": f64(r.sensors, r.sensor_size),
            "observation": f64(r.observation, r.observation_size),
            "reward": f64(r.reward), "info": f64(r.info, r.info_size),
            "randomized": f64(r.randomized, len(r.randomized_items)),
            "terminated": np.array(r.terminated, dtype=bool),
            "truncated": np.array(r.truncated, dtype=bool),
            "codes": np.array(r.codes, dtype=np.uint64),
            "events": np.array(r.events, dtype=np.uint64),
            "step_count": np.array(r.step_count, dtype=np.uint64),
            "digests": bytes(r.digests), "info_keys": list(r.info_keys),
            "randomized_items": list(r.randomized_items),
            "errors": {e.index: RobosimError(e.error.code, e.error.message, endpoint)
                       for e in r.errors}}
