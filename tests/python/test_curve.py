"""CurveZMQ from Python: keys made by robosim-cli keygen (and by pyzmq's zmq.auth) reach a CURVE
server through Client and Observer, by keyword or environment; plaintext and unlisted clients
time out; an observer-only key reads and watches but cannot change a world."""
import os
import subprocess
import time

import pytest
import zmq
import zmq.auth

import robosim
from robosim import curve
from robosim.server import find_server_binary, free_port


def _keygen(tmp, name):
    cli = os.path.join(os.path.dirname(find_server_binary()), "robosim-cli")
    out = subprocess.run([cli, "keygen", "--out", str(tmp / name)], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert len(out) == 40
    return out


@pytest.fixture(scope="module")
def curve_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("curve")
    keys = {name: _keygen(tmp, name) for name in ("server", "ctl", "obs", "stranger")}
    # a key pair made by pyzmq, in the ZeroMQ certificate format keygen also writes
    pub_file, sec_file = zmq.auth.create_certificates(str(tmp), "py")
    keys["py"] = zmq.auth.load_certificate(pub_file)[0].decode()
    (tmp / "authorized").write_text("# test clients\n%s controller\n%s observer\n%s controller\n"
                                    % (keys["ctl"], keys["obs"], keys["py"]))
    endpoint = "tcp://127.0.0.1:%d" % free_port()
    proc = subprocess.Popen(
        [find_server_binary(), "--bind", endpoint, "--stream", "tcp://127.0.0.1:*",
         "--no-world", "--log-level", "warn",
         "--curve-secret-file", str(tmp / "server.key_secret"),
         "--authorized-keys", str(tmp / "authorized")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ctl = dict(server_key=str(tmp / "server.key"), client_key_file=str(tmp / "ctl.key_secret"))
    deadline = time.monotonic() + 10
    while True:
        assert proc.poll() is None, proc.stderr.read().decode()
        try:
            robosim.Client(endpoint, timeout=0.25, **ctl).close()
            break
        except robosim.RobosimError as exc:  # not yet bound (UNAVAILABLE), or no answer yet
            assert exc.code_name in ("UNAVAILABLE", "TIMEOUT"), exc
            assert time.monotonic() < deadline, "the CURVE server did not answer in 10 s"
            time.sleep(0.02)
    yield {"endpoint": endpoint, "dir": tmp, "keys": keys, "ctl": ctl,
           "py_secret": sec_file}
    proc.terminate()
    proc.wait(5)


def test_keygen_files_are_zeromq_certificates(curve_server):
    tmp, keys = curve_server["dir"], curve_server["keys"]
    public, secret = zmq.auth.load_certificate(str(tmp / "ctl.key_secret"))
    assert public.decode() == keys["ctl"] and zmq.curve_public(secret) == public
    assert zmq.auth.load_certificate(str(tmp / "ctl.key")) == (public, None)
    assert os.stat(tmp / "ctl.key_secret").st_mode & 0o777 == 0o600
    assert curve.load_keys(str(tmp / "ctl.key_secret")) == (public, secret)
    with pytest.raises(robosim.RobosimError, match="no secret-key"):
        curve.load_keys(str(tmp / "ctl.key"))


def test_controller_creates_and_steps(curve_server):
    with robosim.Client(curve_server["endpoint"], timeout=5.0, **curve_server["ctl"]) as c:
        wid = c.create_world("finger", seed=1)
        state = c.step(wid, steps=7)
        assert state["step_count"] == 7
        c.destroy_world(wid)


def test_pyzmq_certificate_and_environment(curve_server, monkeypatch):
    # the server's key as Z85 text, the client's a pyzmq-made certificate, both from the env
    monkeypatch.setenv("ROBOSIM_SERVER_KEY", curve_server["keys"]["server"])
    monkeypatch.setenv("ROBOSIM_CLIENT_KEY_FILE", curve_server["py_secret"])
    with robosim.Client(curve_server["endpoint"], timeout=5.0) as c:
        wid = c.create_world("finger")
        assert c.step(wid, steps=2)["step_count"] == 2
        c.destroy_world(wid)
    # "" turns the environment off: plaintext, which a CURVE server never answers
    with pytest.raises(robosim.TimeoutError):
        robosim.Client(curve_server["endpoint"], timeout=0.5, server_key="", client_key_file="")


def test_plaintext_and_unlisted_clients_get_no_answer(curve_server):
    tmp, ep = curve_server["dir"], curve_server["endpoint"]
    with pytest.raises(robosim.TimeoutError):
        robosim.Client(ep, timeout=0.5, server_key="", client_key_file="")
    with pytest.raises(robosim.TimeoutError):
        robosim.Client(ep, timeout=0.5, server_key=str(tmp / "server.key"),
                       client_key_file=str(tmp / "stranger.key_secret"))
    # the listed controller is still served
    with robosim.Client(ep, timeout=5.0, **curve_server["ctl"]) as c:
        assert c.list_worlds() is not None


def test_half_a_key_configuration_is_refused(curve_server):
    with pytest.raises(robosim.RobosimError, match="key pair too"):
        robosim.Client(curve_server["endpoint"], server_key=curve_server["keys"]["server"],
                       client_key_file="")


def test_observer_reads_and_watches_but_cannot_change(curve_server):
    tmp, ep = curve_server["dir"], curve_server["endpoint"]
    obs_keys = dict(server_key=str(tmp / "server.key"), client_key_file=str(tmp / "obs.key_secret"))
    stranger_keys = dict(server_key=str(tmp / "server.key"),
                         client_key_file=str(tmp / "stranger.key_secret"))
    with robosim.Client(ep, timeout=5.0, **curve_server["ctl"]) as ctl, \
            robosim.Client(ep, timeout=5.0, **obs_keys) as obs:
        wid = ctl.create_world("finger", seed=2)
        ctl.step(wid, steps=3)
        assert obs.get_state(wid)["step_count"] == 3
        assert wid in [w["world_id"] for w in obs.list_worlds()]
        obs.set_token(wid, ctl.token(wid))  # even the controller's token does not help
        for call in (lambda: obs.step(wid, steps=1), lambda: obs.create_world("finger"),
                     lambda: obs.fork_world(wid), lambda: obs.claim(wid)):
            with pytest.raises(robosim.RobosimError) as exc:
                call()
            assert exc.value.code_name == "PERMISSION_DENIED" and "observer" in exc.value.message
        stream = ctl.server["stream_endpoint"]
        with robosim.Observer(ep, wid, timeout=5.0, **obs_keys) as watcher, \
                robosim.Observer(stream_endpoint=stream, world_id=wid, **stranger_keys) as outsider:
            frame = None
            for _ in range(60):
                ctl.step(wid, steps=1)
                try:
                    frame = watcher.next(timeout=0.05)
                    break
                except robosim.TimeoutError:
                    continue
            assert frame is not None and frame["world_id"] == wid
            with pytest.raises(robosim.TimeoutError):
                outsider.next(timeout=0.3)
            assert outsider.received == 0
        assert obs.get_state(wid)["step_count"] == ctl.get_state(wid)["step_count"]
        ctl.destroy_world(wid)


def test_a_client_not_admitted_times_out_on_every_call(curve_server):
    """Each call of a plaintext client to the CURVE server ends in a TimeoutError near its
    timeout: the server drops the handshake, so at times there is no connection to send on,
    and the send waits for one no longer than the call's timeout (it used to block for ever)."""
    import threading
    outcomes = []

    def calls():
        c = robosim.Client(curve_server["endpoint"], timeout=0.2, hello=False, server_key="",
                           client_key_file="")
        try:
            for _ in range(15):
                t0 = time.monotonic()
                try:
                    c.list_worlds()
                    outcomes.append("answered")
                except robosim.TimeoutError:
                    outcomes.append(time.monotonic() - t0)
        finally:
            c.close()
    t = threading.Thread(target=calls, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "a call blocked: %d of 15 done" % len(outcomes)
    assert len(outcomes) == 15 and all(isinstance(o, float) and o < 5 for o in outcomes), outcomes
