"""robosim fit does not stop at the first Step it cannot differentiate and is not confidently
wrong: a finger pushed and pulled through touches, bounces, slides and stops (true restitution
0.3, measurement noise) is fitted from guesses on either side of a bounce, on an .npz and on an
MCAP, each 95 % interval holding the truth; Steps the server reports not differentiable are
counted and the fit goes on with central differences of whole replays; a recording that does
not determine the parameter is reported as not converged, exit status 1."""
import json

import numpy as np
import pytest

import robosim
from robosim import fit as F
from robosim.cli import main as cli_main

pytest.importorskip("scipy")

TRUTH = {"finger.kinetic_friction": [0.5], "finger.finger_drag": [1.0],
         "finger.object_drag": [0.3], "finger.restitution": [0.3]}
FIXED = {"finger.object_x0": [0.05], "finger.static_friction": [1.0],
         "finger.resting_speed": [0.05]}
OBS = ["finger.x_f", "finger.v_f", "finger.x_o", "finger.v_o"]
SIGMA = 2e-3


def commands():
    u = np.zeros((150, 1))
    u[:30], u[60:100], u[100:] = 2.0, 1.6, -0.5
    return u


def fixed_without_restitution():
    out = dict(FIXED, **TRUTH)
    del out["finger.restitution"]
    return out


@pytest.fixture(scope="module")
def noisy_npz(tmp_path_factory, endpoint):
    with robosim.Client(endpoint) as c:
        rec = F.record_run(c, "finger", dict(FIXED, **TRUTH), commands())
    assert {"touch", "bounce", "slip"} <= set(rec["events"]), rec["events"]
    path = tmp_path_factory.mktemp("fit") / "run.npz"
    states = rec["states"] + np.random.default_rng(11).normal(0, SIGMA, rec["states"].shape)
    np.savez(path, states=states, commands=rec["commands"])
    return str(path)


def _interval(out):
    line = next(ln for ln in out.splitlines() if ln.startswith("finger.restitution"))
    lo, hi = line.split("[")[1].split("]")[0].split(",")
    return float(line.split()[1]), float(lo), float(hi)


@pytest.mark.parametrize("guess", [0.2, 0.5, 0.7])
def test_fit_npz_from_either_side(noisy_npz, endpoint, capsys, guess):
    rc = cli_main(["fit", noisy_npz, "--preset", "finger", "--endpoint", endpoint,
                   "--param", "finger.restitution=%g,0,1" % guess, "--noise", str(SIGMA),
                   "--fixed", json.dumps(fixed_without_restitution()),
                   "--observe", ",".join(OBS)])
    out, err = capsys.readouterr()
    assert rc == 0, (out, err)
    est, lo, hi = _interval(out)
    assert lo <= 0.3 <= hi and hi - lo < 0.05, out  # honest and informative
    assert "differentiable" in out, out  # it says how it differentiated


def test_fit_mcap_from_far_guess(tmp_path):
    """The same run recorded by robosim record (the observer stream), fitted from 0.7."""
    import threading
    import time
    from robosim import record as rec
    pytest.importorskip("mcap")
    out = str(tmp_path / "run.mcap")
    u = commands()
    with robosim.LocalServer(args=["--stream-max-hz", "1000000"]) as srv, \
            robosim.Client(srv.endpoint) as c:
        wid = c.create_world("finger", params=dict(FIXED, **TRUTH))
        t = threading.Thread(target=lambda: rec.record(srv.endpoint, out, world_id=wid,
                                                       max_frames=len(u), idle=10.0))
        t.start()
        time.sleep(0.5)
        for f in u:
            c.step(wid, steps=1, commands={"finger": [float(f[0])]})
        t.join(30)
        recording = F.from_mcap(out, wid)
        res = F.fit(c, recording, {"finger.restitution": (0.7, 0.0, 1.0)}, "finger",
                    fixed=fixed_without_restitution(), observed=OBS)
    print(F.report(res))
    assert res["success"] and abs(res["estimates"][0] - 0.3) < 1e-6, F.report(res)


class _NotDifferentiableAt:
    """A client whose Step replies say 'not differentiable' at the control steps `at` of each
    world (as the server does for a Step whose mode change its derivatives do not cover)."""

    def __init__(self, client, at):
        self._c, self._at, self._count = client, set(at), {}

    def __getattr__(self, name):
        return getattr(self._c, name)

    def create_world(self, *a, **k):
        wid = self._c.create_world(*a, **k)
        self._count[wid] = 0
        return wid

    def step(self, wid, **k):
        s = self._c.step(wid, **k)
        self._count[wid] += 1
        if k.get("jacobian") and self._count[wid] - 1 in self._at:
            s["jacobian"] = {"differentiable": False, "state": None, "commands": None,
                             "params": None,
                             "not_differentiable": "entity 'finger' (finger): a test's mode"}
        return s


def test_steps_not_differentiable_are_counted_not_fatal(noisy_npz, client):
    rec = F.load_recording(noisy_npz)
    res = F.fit(_NotDifferentiableAt(client, {41, 142}), rec,
                {"finger.restitution": (0.5, 0.0, 1.0)}, "finger",
                fixed=fixed_without_restitution(), observed=OBS, scale=SIGMA)
    report = F.report(res)
    print(report)
    assert res["success"], report
    assert res["not_differentiable"] == 2 and res["jacobian"] == "differences of replays"
    assert "2 of 150 replayed steps not differentiable" in report
    lo, hi = res["interval_level"][0]
    assert lo <= 0.3 <= hi, report


def test_a_fit_that_cannot_converge_says_so(tmp_path, endpoint, capsys):
    """The finger never reaches the object: nothing in the run depends on the restitution. The
    fit must not report an estimate with an interval as if it had one."""
    with robosim.Client(endpoint) as c:
        rec = F.record_run(c, "finger", dict(FIXED, **TRUTH, **{"finger.object_x0": [1.0]}),
                           np.full((40, 1), 0.2))
    assert "touch" not in rec["events"]
    path = tmp_path / "apart.npz"
    np.savez(path, states=rec["states"], commands=rec["commands"])
    fixed = dict(fixed_without_restitution(), **{"finger.object_x0": [1.0]})
    rc = cli_main(["fit", str(path), "--preset", "finger", "--endpoint", endpoint,
                   "--param", "finger.restitution=0.5,0,1", "--fixed", json.dumps(fixed)])
    out, err = capsys.readouterr()
    assert rc == 1, (out, err)
    assert "NOT CONVERGED" in out and "does not determine" in err and \
        len(err.strip().splitlines()) == 1, (out, err)
