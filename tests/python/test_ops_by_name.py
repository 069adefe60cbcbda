"""Every operation of the protocol is reachable by name, from the protobuf descriptors alone:
through Client.call(name, **fields) and through robosim-cli call NAME JSON. A name that is no
operation and a field its message lacks get errors that list what there is."""
import json
import os
import subprocess

import pytest

import robosim
from robosim._proto import pb
from robosim.client import operations

OPS = [f.name for f in pb.Request.DESCRIPTOR.oneofs_by_name["op"].fields]


def _cli(endpoint, *args, stdin=None):
    exe = os.path.join(os.path.dirname(robosim.find_server_binary()), "robosim-cli")
    return subprocess.run([exe, "--endpoint", endpoint, *args], capture_output=True, text=True,
                          timeout=60, input=stdin)


def _reply_type(op):
    return pb.Response.DESCRIPTOR.fields_by_name[op].message_type


def test_operations_are_the_request_oneof():
    assert list(operations()) == OPS and len(OPS) >= 20
    for op in OPS:  # each has its reply of the same name
        assert _reply_type(op) is not None


@pytest.mark.parametrize("form", ["field", "dashed", "message"])
def test_every_operation_reachable_from_python(endpoint, form):
    """Each operation with its message at the defaults reaches the server: the reply is the
    operation's own type, or a server error (code > 0), never the client's "no operation"."""
    with robosim.Client(endpoint, timeout=10.0) as c:
        wid = c.call("create_world", preset="finger").world.world_id
        assert c.token(wid)  # kept from the CreateWorldReply
        for op in sorted(OPS, key=lambda o: o == "destroy_world"):  # destroy last
            name = {"field": op, "dashed": op.replace("_", "-"),
                    "message": operations()[op].DESCRIPTOR.name}[form]
            try:
                reply = c.call(name, world_id=wid)
            except robosim.RobosimError as exc:
                assert exc.code > 0 and "no operation" not in exc.message, (op, exc)
                continue
            assert reply.DESCRIPTOR is _reply_type(op), (op, reply.DESCRIPTOR.full_name)
        assert c.token(wid) == ""  # destroy_world forgot it


def test_fields_by_name_from_python(client):
    wid = client.call("create_world", preset="finger", seed=3,
                      params=[{"entity": "finger", "name": "finger_mass", "values": [2.0]}]
                      ).world.world_id
    spec = client.get_spec(wid)
    assert spec["entities"]["finger"]["params"]["finger_mass"]["values"] == [2.0]
    s = client.call("step", world_id=wid, steps=4, parts=["STATE_PART_STATE"],
                    commands=[pb.ActuatorCommand(entity="finger", values=[1.0])])
    assert s.step_count == 4 and len(s.entities[0].state) == 6
    assert client.call("reset", world_id=wid, seed=9).seed == 9
    client.destroy_world(wid)


def test_bad_names_from_python(client):
    with pytest.raises(robosim.RobosimError) as e:
        client.call("get_stat")
    assert e.value.code_name == "INVALID_ARGUMENT"
    assert "no operation 'get_stat'" in e.value.message and "get_state" in e.value.message
    with pytest.raises(robosim.RobosimError) as e:
        client.call("step", world_id=1, stepz=3)
    assert "Step has no field 'stepz'" in e.value.message
    assert "steps" in e.value.message and "duration" in e.value.message
    with pytest.raises(robosim.RobosimError) as e:
        client.call("step", world_id=1, steps=1, duration=2.0)
    assert "alternatives" in e.value.message and "'duration'" in e.value.message
    with pytest.raises(robosim.RobosimError) as e:
        client.call("step", world_id=1, parts=["NOPE"])
    assert e.value.code_name == "INVALID_ARGUMENT" and "NOPE" in e.value.message
    with pytest.raises(TypeError):
        client.call(pb.Request(), world_id=1)


def test_every_operation_reachable_from_the_cli(endpoint):
    listed = _cli(endpoint, "call", "--list")
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == OPS
    with robosim.Client(endpoint) as c:
        wid = c.create_world("finger")
        token = c.token(wid)
    for op in sorted(OPS, key=lambda o: o == "destroy_world"):
        r = _cli(endpoint, "--world", str(wid), "--token", token, "call", op)
        assert r.returncode in (0, 1), (op, r.stderr)
        if r.returncode == 0:
            fields = set(json.loads(r.stdout))
            assert fields <= {f.name for f in _reply_type(op).fields}, (op, fields)
        else:  # the server's refusal, with its code name
            code = r.stderr.split(":")[1].strip()
            assert code in robosim.errors.CODE_BY_NAME and code != "OK", (op, r.stderr)


def test_cli_builds_requests_from_json(endpoint):
    r = _cli(endpoint, "call", "create_world",
             '{"preset": "finger", "seed": 5, "params": [{"entity": "finger", '
             '"name": "finger_mass", "values": [2]}]}')
    assert r.returncode == 0, r.stderr
    created = json.loads(r.stdout)
    wid, token = str(created["world"]["world_id"]), created["token"]
    w = ("--world", wid, "--token", token)
    r = _cli(endpoint, *w, "call", "step", '{"steps": 7, "parts": ["STATE", "EVENTS"]}')
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["step_count"] == 7
    # bytes round trip: a snapshot printed as base64 restores the state it was taken at
    snap = json.loads(_cli(endpoint, *w, "call", "get_state", '{"snapshot": true}').stdout)
    assert _cli(endpoint, *w, "call", "step", '{"steps": 3}').returncode == 0
    r = _cli(endpoint, *w, "call", "set_state", "-",
             stdin=json.dumps({"snapshot": snap["snapshot"]}))
    assert r.returncode == 0, r.stderr
    back = json.loads(r.stdout)
    assert back["step_count"] == 7 and back["digest"] == snap["digest"]
    assert _cli(endpoint, *w, "call", "destroy-world").returncode == 0


@pytest.mark.parametrize("args, words", [
    (["call", "get_stat"], ["no operation 'get_stat'", "get_state", "GetState {"]),
    (["call", "step", '{"stepz": 3}'], ["Step has no field 'stepz'", "its fields: duration, steps"]),
    (["call", "step", '{"steps": 1, "duration": 2}'], ["alternatives"]),
    (["call", "step", '{"steps": -1}'], ["steps: expected an integer in [0, 4294967295]"]),
    (["call", "step", '{"parts": ["NOPE"]}'], ["parts[0]: NOPE is not a StatePart",
                                               "STATE_PART_STATE"]),
    (["call", "create_world", '{"params": [{"nam": "x"}]}'], ["params[0].nam: Param has no field"]),
    (["call", "get_state", "{not json"], ["not JSON"]),
])
def test_cli_bad_requests_are_usage_errors(endpoint, args, words):
    r = _cli(endpoint, *args)
    assert r.returncode == 2 and r.stdout == "", r
    for w in words:
        assert w in r.stderr, (w, r.stderr)
