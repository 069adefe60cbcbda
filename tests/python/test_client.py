"""robosim.Client: every operation, and every way a call can fail raising the documented
exception within the timeout (server down, wrong endpoint, version refused, server error,
garbage replies)."""
import os
import re
import socket
import subprocess
import threading
import time

import numpy as np
import pytest
import zmq

import robosim
from robosim._proto import pb
from timing import slowdown, wall_bound


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeServer:
    """A ROUTER socket in a thread that answers every request with reply(request) (or not at
    all when reply returns None)."""

    def __init__(self, reply):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.endpoint = "tcp://127.0.0.1:%d" % free_port()
        self.sock.bind(self.endpoint)
        self.reply = reply
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            if not self.sock.poll(50):
                continue
            ident, data = self.sock.recv_multipart()
            out = self.reply(pb.Request.FromString(data))
            if out is not None:
                self.sock.send_multipart([ident, out if isinstance(out, bytes)
                                          else out.SerializeToString()])

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()
        self.ctx.term()


def test_every_operation(client):
    hello = client.server
    assert hello["major"] == 1 and "step" in hello["capabilities"]
    # the Gymnasium ids come from the same task family files as the server's built-in tasks
    # (the built-in ones first, in the same order; tasks registered since follow them)
    assert hello["tasks"][:len(robosim.TASKS)] == list(robosim.TASKS), hello["tasks"]
    assert "finger" in hello["presets"]
    wid = client.create_world("diff_drive", params={"robot.obstacles": [3.0, 0, 0.1]}, seed=3)
    try:
        assert any(w["world_id"] == wid for w in client.list_worlds())
        spec = client.get_spec(wid)
        robot = spec["entities"]["robot"]
        assert robot["kind"] == "diff_drive" and robot["params"]["obstacles"]["values"] == [3.0, 0, 0.1]
        assert [v["name"] for v in robot["state"]] == ["x", "y", "theta"]
        assert spec["task"] is None
        client.set_force(wid, "robot", [3, 3])
        s = client.step(wid, steps=100)
        # 0.09 m wheels (the chapter's 18 cm across) at 3 rad/s for 1 s: 0.27 m
        assert s["step_count"] == 100 and abs(s["entities"]["robot"]["state"][0] - 0.27) < 1e-8
        assert isinstance(s["entities"]["robot"]["state"], np.ndarray)
        s = client.step(wid, duration=0.5, commands={"robot": [2, -2]})
        assert abs(s["entities"]["robot"]["state"][2] - 0.75) < 1e-9
        client.set_params(wid, {"robot.wheel_radius": 0.1})
        client.set_schedule(wid, "robot", 0, [1.5, 2.5], [0, 4])
        s = client.get_state(wid)
        assert s["time"] == pytest.approx(1.5)
        s = client.reset(wid, seed=9)
        assert s["time"] == 0 and s["step_count"] == 0
    finally:
        client.destroy_world(wid)
    arm = client.create_world("serial_arm")
    client.set_target(arm, "arm", [0.1, 0.1])
    ws = client.get_workspace(arm, "arm", samples=16, query=[0.1, 0.1, 1.0, 1.0])
    assert ws["boundary"].shape == (16, 2) and list(ws["reachable"]) == [True, False]
    client.destroy_world(arm)


def test_server_error_raises_robosim_error(client):
    with pytest.raises(robosim.RobosimError) as e:
        client.get_state(987654)
    assert e.value.code == 2 and e.value.code_name == "NOT_FOUND"
    assert "987654" in e.value.message and e.value.endpoint == client.endpoint
    with pytest.raises(robosim.RobosimError) as e:
        client.create_world("no_such_preset")
    assert e.value.code_name == "NOT_FOUND" and "workshop" in e.value.message
    with pytest.raises(robosim.RobosimError) as e:
        client.create_world(task="FingerPush-v0", preset="serial_arm")
    assert e.value.code_name == "INVALID_ARGUMENT"
    wid = client.create_world("finger")
    with pytest.raises(robosim.RobosimError) as e:
        client.step(wid, action=[1.0])
    assert e.value.code_name == "FAILED_PRECONDITION" and "no task" in e.value.message
    client.destroy_world(wid)
    assert client.list_worlds() is not None  # still serving


def test_version_refused(client, endpoint):
    with pytest.raises(robosim.RobosimError) as e:
        client.hello(major=2)
    assert e.value.code == 9 and e.value.code_name == "VERSION_MISMATCH"
    # a server that answers with another major is refused by the client
    fake = FakeServer(lambda rq: pb.Response(id=rq.id, hello=pb.HelloReply(major=2, minor=0)))
    try:
        with pytest.raises(robosim.RobosimError) as e:
            robosim.Client(fake.endpoint, timeout=2)
        assert e.value.code_name == "VERSION_MISMATCH" and fake.endpoint in e.value.message
    finally:
        fake.close()


def test_server_down_fails_at_once_naming_the_endpoint():
    """Nothing listens on a local port: refused within a second, whatever the timeout, with a
    message saying what to do (Client, gym.make)."""
    import gymnasium as gym
    endpoint = "tcp://127.0.0.1:%d" % free_port()  # nobody listens
    for make in (lambda: robosim.Client(endpoint, timeout=10.0),
                 lambda: gym.make("robosim/FingerPush-v0", endpoint=endpoint)):
        slow, t0 = slowdown(), time.monotonic()
        with pytest.raises(robosim.RobosimError) as e:
            make()
        took = time.monotonic() - t0
        assert took < wall_bound(1.0, max(slow, slowdown())), took
        assert e.value.code_name == "UNAVAILABLE" and endpoint in str(e.value)
        assert "is a robosim-server running there?" in e.value.message


def test_endpoint_from_environment(endpoint, monkeypatch):
    """$ROBOSIM_ENDPOINT is the default endpoint of Client, gym.make and robosim.vector."""
    import gymnasium as gym
    monkeypatch.setenv("ROBOSIM_ENDPOINT", endpoint)
    with robosim.Client() as c:
        assert c.endpoint == endpoint
    env = gym.make("robosim/FingerPush-v0")
    venv = robosim.vector.make("robosim/FingerPush-v0", num_envs=2)
    try:
        assert env.unwrapped._server is None and env.unwrapped.endpoint == endpoint
        assert venv._server is None and venv.endpoint == endpoint
    finally:
        env.close()
        venv.close()


def test_silent_server_times_out():
    fake = FakeServer(lambda rq: None)
    try:
        slow, t0 = slowdown(), time.monotonic()
        with pytest.raises(robosim.TimeoutError) as e:
            robosim.Client(fake.endpoint, timeout=0.4)
        took = time.monotonic() - t0
        assert took < wall_bound(2.0, max(slow, slowdown())), took
        assert fake.endpoint in e.value.message
    finally:
        fake.close()


def test_wrong_endpoint():
    slow, t0 = slowdown(), time.monotonic()
    with pytest.raises(robosim.RobosimError) as e:
        robosim.Client("tcp://no-such-host-name.invalid", timeout=1)
    assert e.value.code_name == "INVALID_ARGUMENT" and "no-such-host" in e.value.message
    with pytest.raises(robosim.RobosimError) as e:
        robosim.Client("http://127.0.0.1:7", timeout=1)  # refused by scheme, never dialled
    assert e.value.code_name == "INVALID_ARGUMENT"
    took = time.monotonic() - t0
    assert took < wall_bound(1.0, max(slow, slowdown())), took


def test_garbage_and_stale_replies():
    fake = FakeServer(lambda rq: b"\xff\xfe not a protobuf")
    try:
        with pytest.raises(robosim.ProtocolError) as e:
            robosim.Client(fake.endpoint, timeout=2)
        assert isinstance(e.value, robosim.RobosimError) and fake.endpoint in e.value.message
    finally:
        fake.close()
    # a stale reply (another id) is skipped, the right one taken
    def reply(rq):
        stale = pb.Response(id=rq.id + 1000, error=pb.Error(code=2, message="stale"))
        fresh = pb.Response(id=rq.id, hello=pb.HelloReply(major=1, tasks=["X-v0"]))
        return stale.SerializeToString() if rq.id < 0 else fresh
    fake = FakeServer(reply)
    try:
        with robosim.Client(fake.endpoint, timeout=2) as c:
            assert c.server["tasks"] == ["X-v0"]
    finally:
        fake.close()


def test_tokens_are_kept_and_sent(client, endpoint):
    wid = client.create_world(task="FingerTouch-v0", seed=1)
    token = client.token(wid)
    client.step(wid, action=[0.1])  # our own token goes with it
    other = robosim.Client(endpoint)
    try:
        if token:
            with pytest.raises(robosim.RobosimError) as e:
                other.step(wid, action=[0.1])
            assert e.value.code_name == "PERMISSION_DENIED"
            other.set_token(wid, token)
            other.step(wid, action=[0.1])
        else:
            other.step(wid, action=[0.1])  # a server without roles: anyone may step
        assert other.get_state(wid)["task"] is not None  # reading needs no token
    finally:
        other.close()
        client.destroy_world(wid)


def test_token_from_environment(client, endpoint, monkeypatch):
    """$ROBOSIM_WORLD and $ROBOSIM_TOKEN (robosim-cli create's exports): a new client holds that
    token and may change the world."""
    wid = client.create_world(task="FingerTouch-v0", seed=1)
    try:
        assert client.token(wid), "the server gives controller tokens"
        with robosim.Client(endpoint) as stranger:
            with pytest.raises(robosim.RobosimError) as e:
                stranger.step(wid, action=[0.1])
            assert e.value.code_name == "PERMISSION_DENIED"
        monkeypatch.setenv("ROBOSIM_WORLD", str(wid))
        monkeypatch.setenv("ROBOSIM_TOKEN", client.token(wid))
        with robosim.Client(endpoint) as other:
            assert other.token(wid) == client.token(wid)
            other.step(wid, action=[0.1])
    finally:
        client.destroy_world(wid)


def test_task_world_through_the_client(client):
    wid = client.create_world(task="SerialArmReach-v0", seed=4)
    try:
        spec = client.get_spec(wid)
        t = spec["task"]
        assert t["name"] == "SerialArmReach-v0" and len(t["observation"]) == 8
        assert [v["name"] for v in t["action"]] == ["joint1", "joint2"]
        assert spec["world"]["task"] == "SerialArmReach-v0"
        s = client.reset(wid, seed=4)
        assert s["task"]["reward"] == 0 and s["task"]["observation"].shape == (8,)
        s = client.step(wid, action=[0.5, -0.5], steps=3)
        assert s["step_count"] == 3 and set(s["task"]["info"]) == {"distance", "speed",
                                                                   "effort", "success"}
        with pytest.raises(robosim.RobosimError) as e:
            client.step(wid, commands={"arm": [0, 0]})
        assert e.value.code_name == "INVALID_ARGUMENT" and "action" in e.value.message
    finally:
        client.destroy_world(wid)


def test_step_request_bytes_match_protobuf():
    """The single env's hand-built Step request parses to exactly the Request protobuf builds
    (ids and action lengths across varint widths)."""
    from robosim._proto import pb
    from robosim.client import step_request_tail
    for rid, wid, n in [(1, 1, 1), (127, 300, 2), (128, 2 ** 40, 8), (2 ** 14 - 1, 5, 3),
                        (2 ** 14, 6, 3), (2 ** 21 - 1, 7, 4), (2 ** 21, 8, 5),
                        (2 ** 63 + 5, 7, 20)]:
        action = np.random.default_rng(rid % 1000).normal(size=n)
        head = pb.Request(world_id=wid, token="0123456789abcdef0123456789abcdef")
        data = head.SerializeToString() + step_request_tail(rid, action)
        want = pb.Request(id=rid, world_id=wid, token=head.token,
                          step=pb.Step(steps=1, action=action.tolist()))
        assert pb.Request.FromString(data) == want


def test_protocol_1_2(client):
    """Protocol 1.2 from Python: the versions agree, Step.parts cut the reply, the per-item
    StepBatch in its oneof, Reset's optional seed (0 is a seed), the workshop's base poses, and
    steps and duration excluding each other."""
    assert (client.server["major"], client.server["minor"]) == (1, robosim.client.PROTOCOL_MINOR)
    assert client.server["minor"] >= 2
    assert {"step.parts", "spec.base_pose"} <= set(client.server["capabilities"])
    wid = client.create_world("diff_drive", params={"robot.obstacles": [0.5, 0, 0.1]}, seed=3)
    try:
        s = client.step(wid, steps=100, commands={"robot": [3, 3]}, parts=["events"])
        assert s["entities"] == {} and s["stats"] is None and s["step_count"] == 100
        # contact when the centre is 0.15 + 0.1 m from the obstacle's: 0.25 m at 0.27 m/s
        assert [e["kind"] for e in s["events"]] == ["contact"]
        assert s["events"][0]["time"] == pytest.approx(0.25 / 0.27, abs=1e-9)
        s = client.step(wid, parts=["sensors"])
        robot = s["entities"]["robot"]
        assert len(robot["state"]) == 0 and list(robot["sensors"]) == [1.0, 0.0]
        assert s["events"] == [] and s["stats"] is None
        with pytest.raises(ValueError):
            client.step(wid, parts=["velocity"])
        with pytest.raises(ValueError):
            client.step(wid, steps=1, duration=0.01)
        # the per-item batch (BatchItems in StepBatch's oneof), with parts per item
        r = client.step_batch([{"world_id": wid, "steps": 2, "parts": ["state"]}])
        assert r[0]["step_count"] == 103 and len(r[0]["entities"]["robot"]["state"]) == 3
        assert len(r[0]["entities"]["robot"]["sensors"]) == 0
    finally:
        client.destroy_world(wid)
    shop = client.create_world("workshop")
    try:
        spec = client.get_spec(shop)
    finally:
        client.destroy_world(shop)
    poses = {n: e["base_pose"] for n, e in spec["entities"].items()}
    assert poses == {"finger": [-1.0, 0.0, 0.0], "arm": [0.0, 0.0, 0.0],
                     "delta": [0.5, 0.0, 0.0], "robot": [0.0, -1.0, 0.0]}
    task = client.create_world("", task="DiffDriveGoal-v0", seed=5)
    try:
        again = client.reset(task)["task"]["observation"]       # the last seed, 5
        zero = client.reset(task, seed=0)["task"]["observation"]  # seed 0 set: reseeded
        assert not np.array_equal(again, zero)
        np.testing.assert_array_equal(client.reset(task)["task"]["observation"], zero)
    finally:
        client.destroy_world(task)


def _cli(endpoint, *args, env=None):
    exe = os.path.join(os.path.dirname(robosim.find_server_binary()), "robosim-cli")
    return subprocess.run([exe, "--endpoint", endpoint, *args], capture_output=True, text=True,
                          timeout=30, env=env)


def test_cli_help_from_its_table_and_task_worlds(endpoint):
    """robosim-cli's usage lists every command from its one table (each with its synopsis;
    help COMMAND prints one); a task world is created, stepped with an action and batched."""
    r = _cli(endpoint, "--help")
    assert r.returncode == 0
    commands = ["hello", "list", "create", "claim", "destroy", "spec", "reset", "step",
                "step-batch", "state", "set-force", "set-params", "schedule", "target",
                "workspace", "monte-carlo", "wrench", "snapshot", "restore", "motion-spec", "fork", "watch",
                "keygen", "call", "help"]
    table = r.stdout.split("Commands:\n")[1].split("\nCommands that change")[0]
    listed = re.findall(r"^  ([a-z-]+)(?: |$)", table, re.M)
    assert listed == commands
    assert re.search(r"Commands that change a world \(destroy, reset, step, step-batch, "
                     r"set-force, set-params, schedule, target, wrench, restore, motion-spec\)", r.stdout)
    one = _cli(endpoint, "help", "step-batch")
    assert one.returncode == 0 and one.stdout.startswith("usage: robosim-cli [OPTIONS] step-batch")
    assert _cli(endpoint, "help", "nope").returncode == 2

    made = []
    for seed in (3, 4):
        r = _cli(endpoint, "create", "--task", "DiffDriveGoal-v0", "--seed", str(seed),
                 "--show-token")
        assert r.returncode == 0, r.stderr
        wid, token = r.stdout.split()
        made.append((wid, token))
    (w1, t1), (w2, t2) = made
    try:
        r = _cli(endpoint, "--world", w1, "--token", t1, "step", "--action", "5,5",
                 "--parts", "task")
        assert r.returncode == 0, r.stderr
        assert "task: reward" in r.stdout and "state " not in r.stdout
        r = _cli(endpoint, "step-batch", "--steps", "2", f"{w1}:{t1}=1,1", f"{w2}:{t2}=2,-2")
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].startswith(f"world {w1}  OK") and "step 3" in lines[0]
        assert lines[1].startswith(f"world {w2}  OK") and "step 2" in lines[1]
        assert "reward" in lines[1]
        r = _cli(endpoint, "step-batch", f"{w1}:{t1}", f"{w2}:{t2}=1,1")
        assert r.returncode == 2 and "every world or for none" in r.stderr
    finally:
        for wid, token in made:
            _cli(endpoint, "--world", wid, "--token", token, "destroy")


def test_build_fingerprint(client):
    """Hello says what the server's bits depend on: the commit it was built from, the compiler
    and its floating-point flags (no contraction into FMA, no fast-math), SUNDIALS, the
    architecture and the math library at run time."""
    import platform
    b = client.hello()["build"]
    assert b["version"] == client.hello()["server_version"]
    assert "-ffp-contract=off" in b["fp_flags"].split() and "-fno-fast-math" in b["fp_flags"]
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", b["sundials"]), b
    assert b["arch"] == platform.machine(), b
    libc, version = platform.libc_ver()
    assert libc == "glibc" and b["libm"] == "glibc " + version, b
    assert b["compiler"].split()[0] in ("GNU", "Clang") and b["build_type"], b
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True, cwd=os.path.dirname(__file__))
    if head.returncode == 0:  # a checkout: the build names a commit of it
        assert re.fullmatch(r"[0-9a-f]{12}(\+changes)?", b["commit"]), b


def _connections_to(port):
    """Established TCP connections to `port` on this machine (/proc/net/tcp, remote port)."""
    n = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            cols = line.split()
            if int(cols[2].split(":")[1], 16) == port and cols[3] == "01":
                n += 1
    return n


def test_requests_go_to_the_worlds_shard():
    """With --shards, Hello lists each shard's own port; the client steps (general calls, the
    environments' stepper and a StepBatch) through its worlds' shard's port, with the same
    results as a client of one connection."""
    with robosim.LocalServer(args=["--shards", "2", "--threads", "1"]) as srv:
        with robosim.Client(srv.endpoint) as c, \
                robosim.Client(srv.endpoint, one_connection=True) as solo:
            ports = c.server["shard_ports"]
            assert len(ports) == 2 and all(p > 0 for p in ports)
            assert _connections_to(ports[0]) + _connections_to(ports[1]) == 0
            w = c.create_world(task="FingerPush-v0", seed=3)
            twin = solo.create_world(task="FingerPush-v0", seed=3)
            shard = next(x["shard"] for x in c.list_worlds() if x["world_id"] == w)
            n = len(c.get_spec(w)["task"]["action"])
            for cl, wid in ((c, w), (solo, twin)):
                cl.step(wid, action=[0.3] * n)
                cl.step_batch([{"world_id": wid, "steps": 2, "action": [0.2] * n}])
                cl.stepper(wid)([0.1] * n)
            assert _connections_to(ports[shard]) == 1, "one connection to its shard's port"
            assert _connections_to(ports[1 - shard]) == 0
            a, b = c.get_state(w), solo.get_state(twin)
            assert a["step_count"] == b["step_count"] == 4
            assert a["digest"] == b["digest"] and a["digest"]


def test_unreachable_shard_port_falls_back():
    """A server whose Hello lists shard ports nobody listens on (ports not published, a
    firewall): the client tries the port once (at most 2 s), then sends by its one connection.
    A stand-in server on a thread answers Hello, CreateWorld (on shard 1) and Step."""
    ctx = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    dead = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        dead.append(s.getsockname()[1])
        s.close()
    served = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            if not router.poll(50):
                continue
            ident, data = router.recv_multipart()
            rq = pb.Request.FromString(data)
            rp = pb.Response(id=rq.id)
            if rq.WhichOneof("op") == "hello":
                rp.hello.major = 1
                rp.hello.shard_ports.extend(dead)
            elif rq.WhichOneof("op") == "create_world":
                rp.create_world.world.world_id = 5
                rp.create_world.world.shard = 1
                rp.create_world.token = "0123456789abcdef0123456789abcdef"
            else:
                rp.step.world_id = 5
                served.append(rq.WhichOneof("op"))
            router.send_multipart([ident, rp.SerializeToString()])

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        with robosim.Client("tcp://127.0.0.1:%d" % port, timeout=10.0) as c:
            assert c.server["shard_ports"] == dead
            w = c.create_world("finger")
            slow, t0 = slowdown(), time.monotonic()
            c.step(w)
            t1 = time.monotonic()
            c.stepper(w)([0.1])
            t2 = time.monotonic()
            slow = max(slow, slowdown())
            assert t1 - t0 < wall_bound(4.0, slow) and t2 - t1 < wall_bound(0.5, slow), \
                (t1 - t0, t2 - t1, slow)
            assert served == ["step", "step"]
    finally:
        stop.set()
        t.join()
        router.close(0)
