"""robosim fit: parameters recovered from runs the server recorded with known values (through
the finger's touches, bounces and slides, and the serial arm's dry-friction sticking), to 1e-6
relative without noise; with Gaussian measurement noise the true values lie inside the reported
99 % intervals (a fixed noise seed, so the test is deterministic)."""
import numpy as np
import pytest

from robosim import fit as F

pytest.importorskip("scipy")

TIGHT = {"rtol": 1e-12, "atol": 1e-13}

FINGER_TRUTH = {"finger.kinetic_friction": 0.5, "finger.finger_drag": 1.0,
                "finger.object_drag": 0.3, "finger.restitution": 0.5}
FINGER_FIXED = {"finger.object_x0": [0.05], "finger.static_friction": [1.0],
                "finger.resting_speed": [0.05]}
FINGER_OBS = ["finger.x_f", "finger.v_f", "finger.x_o", "finger.v_o"]


def finger_commands():
    """Push, let go, push again, pull back: touches, bounces, slides and stops."""
    u = np.zeros((150, 1))
    u[:30], u[60:100], u[100:] = 2.0, 1.6, -0.5
    return u


def finger_guess():
    g = {k: (1.3 * v, 0.0, 10.0) for k, v in FINGER_TRUTH.items()}
    g["finger.restitution"] = (0.4, 0.0, 1.0)
    return g


def test_fit_finger_noise_free(client):
    rec = F.record_run(client, "finger", dict(FINGER_FIXED, **{k: [v] for k, v in
                                                                FINGER_TRUTH.items()}),
                       finger_commands(), TIGHT)
    assert rec["events"].count("touch") >= 3 and "bounce" in rec["events"], rec["events"]
    res = F.fit(client, rec, finger_guess(), "finger", fixed=FINGER_FIXED, observed=FINGER_OBS,
                world_params=TIGHT)
    print(F.report(res))
    for name, v in zip(res["names"], res["estimates"]):
        assert abs(v - FINGER_TRUTH[name]) <= 1e-6 * FINGER_TRUTH[name], (name, v)


def test_fit_finger_with_noise(client):
    rec = F.record_run(client, "finger", dict(FINGER_FIXED, **{k: [v] for k, v in
                                                                FINGER_TRUTH.items()}),
                       finger_commands(), TIGHT)
    sigma = 2e-3
    noisy = dict(rec)
    noisy["states"] = rec["states"] + np.random.default_rng(7).normal(0, sigma,
                                                                       rec["states"].shape)
    res = F.fit(client, noisy, finger_guess(), "finger", fixed=FINGER_FIXED,
                observed=FINGER_OBS, scale=sigma, world_params=TIGHT)
    print(F.report(res))
    assert 0.8 < res["residual_rms"] < 1.2  # the residuals are the noise
    for name, (lo, hi) in zip(res["names"], res["interval"]):
        assert lo <= FINGER_TRUTH[name] <= hi, (name, lo, hi)
        assert hi - lo < 0.5 * FINGER_TRUTH[name]  # and the interval says something


ARM_TRUTH = {"arm.m1": 0.2, "arm.m2": 0.1, "arm.mu_V[0]": 0.02, "arm.mu_V[1]": 0.01,
             "arm.mu_D[1]": 0.01}
ARM_FIXED = {"arm.actuator_mode": [0, 0], "arm.tau_max": [2.0, 2.0]}


def arm_commands():
    t = np.arange(120) * 0.01
    return np.column_stack([0.3 * np.sin(3 * t), 0.08 * np.cos(5 * t)])


def test_fit_serial_arm_noise_free(client):
    truth_params = dict(ARM_FIXED, **{"arm.m1": [0.2], "arm.m2": [0.1],
                                      "arm.mu_V": [0.02, 0.01], "arm.mu_D": [0.0, 0.01]})
    rec = F.record_run(client, "serial_arm", truth_params, arm_commands(), TIGHT)
    guess = {k: (1.25 * v, 1e-4, 10.0) for k, v in ARM_TRUTH.items()}
    fixed = dict(ARM_FIXED, **{"arm.mu_D": [0.0, 0.0125]})
    res = F.fit(client, rec, guess, "serial_arm", fixed=fixed,
                observed=["arm.theta1", "arm.theta2", "arm.theta1_dot", "arm.theta2_dot"],
                world_params=TIGHT)
    print(F.report(res), rec["events"])
    for name, v in zip(res["names"], res["estimates"]):
        assert abs(v - ARM_TRUTH[name]) <= 1e-6 * ARM_TRUTH[name], (name, v)


def test_fit_command_line(client, endpoint, tmp_path, capsys):
    """robosim fit on an .npz recording: the report names each estimate and its interval."""
    from robosim.cli import main
    truth = dict(FINGER_FIXED, **{k: [v] for k, v in FINGER_TRUTH.items()}, **TIGHT)
    rec = F.record_run(client, "finger", truth, finger_commands())
    path = tmp_path / "run.npz"
    np.savez(path, states=rec["states"], commands=rec["commands"])
    fixed = dict(FINGER_FIXED, **{k: [v] for k, v in FINGER_TRUTH.items()
                                  if k != "finger.restitution"}, **TIGHT)
    import json
    rc = main(["fit", str(path), "--preset", "finger", "--endpoint", endpoint,
               "--param", "finger.restitution=0.3,0,1", "--fixed", json.dumps(fixed),
               "--observe", ",".join(FINGER_OBS), "--plot", str(tmp_path / "fit.png")])
    out = capsys.readouterr().out
    assert rc == 0, out
    line = next(ln for ln in out.splitlines() if ln.startswith("finger.restitution"))
    assert abs(float(line.split()[1]) - 0.5) < 1e-6, line
    assert (tmp_path / "fit.png").stat().st_size > 1000


def test_fit_from_mcap(tmp_path):
    """A run recorded by robosim record from its first step: the MCAP's states and commands fit
    the restitution the run had."""
    import threading
    import time

    import robosim
    from robosim import record as rec
    pytest.importorskip("mcap")
    out = str(tmp_path / "run.mcap")
    truth = dict(FINGER_FIXED, **{k: [v] for k, v in FINGER_TRUTH.items()}, **TIGHT)
    u = finger_commands()[:80]
    with robosim.LocalServer(args=["--stream-max-hz", "1000000"]) as srv, \
            robosim.Client(srv.endpoint) as c:
        wid = c.create_world("finger", params=truth)
        result = {}
        t = threading.Thread(target=lambda: result.update(n=rec.record(
            srv.endpoint, out, world_id=wid, max_frames=len(u), idle=10.0)))
        t.start()
        time.sleep(0.5)
        for f in u:
            c.step(wid, steps=1, commands={"finger": [float(f[0])]})
        t.join(30)
        recording = F.from_mcap(out, wid)
        np.testing.assert_array_equal(recording["commands"], u)
        fixed = dict(truth)
        del fixed["finger.restitution"]
        res = F.fit(c, recording, {"finger.restitution": (0.3, 0.0, 1.0)}, "finger",
                    fixed=fixed, observed=FINGER_OBS)
    assert abs(res["estimates"][0] - 0.5) < 1e-6, F.report(res)
