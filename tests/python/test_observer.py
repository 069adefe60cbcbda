"""robosim.Observer follows the PUB stream of one world: every step of a slow run, in order."""
import os
import subprocess
import sys
import threading
import time

import pytest

import robosim


def _assert_stream(capabilities):
    # the test servers run with the stream on: its absence is a failure, not a skip
    assert capabilities.get("stream_endpoint"), "the server advertises no observer stream"


def test_observer_sees_every_step_in_order(endpoint, capabilities):
    _assert_stream(capabilities)
    with robosim.Client(endpoint) as c:
        wid = c.create_world(task="FingerPush-v0", seed=3)
        with robosim.Observer(endpoint, wid, timeout=5.0) as obs:
            # the subscription takes a moment to reach the server: step until a frame arrives
            first = None
            for _ in range(50):
                c.step(wid, action=[0.5])
                try:
                    first = obs.next(timeout=0.1)
                    break
                except robosim.TimeoutError:
                    continue
            assert first is not None, "no frame within 50 steps"
            # drain what was published meanwhile
            while True:
                try:
                    first = obs.next(timeout=0.2)
                except robosim.TimeoutError:
                    break
            steps = 25
            for _ in range(steps):
                c.step(wid, action=[1.0])
                time.sleep(0.03)  # a slow run, below the stream rate limit (60 Hz default)
            got = [obs.next(timeout=2.0) for _ in range(steps)]
            seqs = [s["seq"] for s in got]
            assert seqs == list(range(first["seq"] + 1, first["seq"] + 1 + steps))
            counts = [s["step_count"] for s in got]
            assert counts == list(range(first["step_count"] + 1, first["step_count"] + 1 + steps))
            assert all(s["world_id"] == wid and s["task"] is not None for s in got)
            assert obs.missed == 0
        c.destroy_world(wid)


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_watch_command_prints_states(endpoint, capabilities, how):
    """robosim watch, the server named by --endpoint or by $ROBOSIM_ENDPOINT."""
    _assert_stream(capabilities)
    if how == "flag":
        extra, env = ["--endpoint", endpoint], dict(os.environ)
    else:
        extra, env = [], dict(os.environ, ROBOSIM_ENDPOINT=endpoint)
    with robosim.Client(endpoint) as c:
        wid = c.create_world("finger")
        proc = subprocess.Popen([sys.executable, "-m", "robosim.cli", "watch", str(wid),
                                 "--count", "3"] + extra, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 20
            while proc.poll() is None and time.monotonic() < deadline:
                c.step(wid, steps=1)
                time.sleep(0.05)
            out, err = proc.communicate(timeout=5)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, err
        lines = [l for l in out.splitlines() if l.startswith("seq ")]
        assert len(lines) == 3 and "finger[" in lines[0]
        c.destroy_world(wid)
