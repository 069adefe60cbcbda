"""robosim fit's intervals against coverage: synthetic recordings with known parameters (drawn
at random per recording) and Gaussian measurement noise of a known deviation, each fitted from
a guess away from the truth; the nominal 95 % interval must cover the truth in 90-98 % of them,
per robot. The coverage is printed.

Sizes: the normal suite fits 200 recordings of the finger (12 control steps each, through its
touches and bounces: restitution and kinetic friction) and 60 each of the serial arm (15 steps:
a mass and a viscous friction) and the diff drive (10 steps: wheel radius and half axle), to
stay within about a minute; with fewer than 200 the band is 95 % +- 2.6 binomial deviations.
ROBOSIM_LONG_COVERAGE=1 fits 200 of every robot, the parallel arm too, against 90-98 %;
ROBOSIM_COVERAGE_N=N sets the count. Every recording
and guess is drawn from a generator seeded by the robot's name, so a run is deterministic."""
import os
import time
import zlib

import numpy as np
import pytest

from robosim import fit as F

pytest.importorskip("scipy")

LONG = os.environ.get("ROBOSIM_LONG_COVERAGE", "") not in ("", "0")


def _finger(rng, k):
    truth = {"finger.restitution": rng.uniform(0.2, 0.8),
             "finger.kinetic_friction": rng.uniform(0.2, 0.8)}
    fixed = {"finger.object_x0": [rng.uniform(0.002, 0.006)], "finger.static_friction": [1.0],
             "finger.object_drag": [0.3], "finger.resting_speed": [0.001]}
    u = np.full((k, 1), rng.uniform(1.5, 3.0))
    u[k // 2:] = rng.uniform(-0.5, 0.5)
    bounds = {"finger.restitution": (0.0, 1.0), "finger.kinetic_friction": (0.0, 1.0)}
    return truth, fixed, u, bounds, ["finger.x_f", "finger.v_f", "finger.x_o", "finger.v_o"]


def _serial_arm(rng, k):
    truth = {"arm.m2": rng.uniform(0.08, 0.15), "arm.mu_V[1]": rng.uniform(0.005, 0.03)}
    fixed = {"arm.actuator_mode": [0, 0], "arm.tau_max": [2.0, 2.0], "arm.mu_V": [0.01, 0.01]}
    t = np.arange(k) * 0.01
    a, w = rng.uniform(0.1, 0.4, 2), rng.uniform(2, 6, 2)
    u = np.column_stack([a[0] * np.sin(w[0] * t), a[1] * np.cos(w[1] * t)])
    bounds = {"arm.m2": (0.01, 1.0), "arm.mu_V[1]": (0.0, 0.2)}
    return truth, fixed, u, bounds, ["arm.theta1", "arm.theta2", "arm.theta1_dot",
                                     "arm.theta2_dot"]


def _diff_drive(rng, k):
    truth = {"robot.wheel_radius": rng.uniform(0.07, 0.11),
             "robot.half_axle": rng.uniform(0.1, 0.15)}
    u = np.column_stack([rng.uniform(1, 4) + 0.5 * np.sin(np.arange(k) * 0.3),
                         rng.uniform(1, 4) + 0.5 * np.cos(np.arange(k) * 0.2)])
    bounds = {"robot.wheel_radius": (0.01, 0.5), "robot.half_axle": (0.01, 0.5)}
    return truth, {}, u, bounds, ["robot.x", "robot.y", "robot.theta"]


def _parallel_arm(rng, k):
    truth = {"delta.mu_V[0]": rng.uniform(0.0005, 0.003), "delta.J[1]": rng.uniform(5e-5, 2e-4)}
    fixed = {"delta.actuator_mode": [0, 0]}
    t = np.arange(k) * 0.01
    a = rng.uniform(1e-4, 3e-4, 2)  # torques that keep both joints off their stops
    u = np.column_stack([a[0] * np.sin(rng.uniform(2, 6) * t),
                         a[1] * np.cos(rng.uniform(2, 6) * t)])
    bounds = {"delta.mu_V[0]": (0.0, 0.05), "delta.J[1]": (1e-6, 1e-2)}
    return truth, fixed, u, bounds, ["delta.theta1", "delta.theta2", "delta.theta1_dot",
                                     "delta.theta2_dot"]


#         preset,        scenario,      steps, noise, recordings (the long run: 200 each)
ROBOTS = [("finger", _finger, 12, 1e-3, 200),
          ("serial_arm", _serial_arm, 15, 1e-3, 60),
          ("diff_drive", _diff_drive, 10, 1e-3, 60)]
if LONG:
    ROBOTS.append(("parallel_arm", _parallel_arm, 30, 1e-3, 200))


def _full(params, truth):
    """The CreateWorld parameters with the true values put in (vector elements too)."""
    out = dict(params)
    for item, v in truth.items():
        entity, name, k = F._split(item)
        key = "%s.%s" % (entity, name)
        if k is None:
            out[key] = [v]
        else:
            out[key][k] = v
    return out


def coverage(client, preset, scenario, steps, sigma, count, seed_name):
    rng = np.random.default_rng(zlib.crc32(seed_name.encode()))
    wid = client.create_world(preset)
    try:
        spec_params = client.get_spec(wid)["entities"]
    finally:
        client.destroy_world(wid)
    for _ in range(count):
        truth, fixed, u, bounds, obs = scenario(rng, steps)
        base = {k: list(v) for k, v in fixed.items()}
        for item in truth:  # a vector parameter's other elements: the world's own
            entity, name, k = F._split(item)
            key = "%s.%s" % (entity, name)
            if k is not None and key not in base:
                base[key] = list(spec_params[entity]["params"][name]["values"])
        rec = F.record_run(client, preset, _full(base, truth), u)
        idx = [rec["state_names"].index(o) for o in obs]
        noisy = dict(rec)
        noisy["states"] = rec["states"].copy()
        noisy["states"][:, idx] += rng.normal(0, sigma, (len(rec["states"]), len(idx)))
        guess = {}
        for item, v in truth.items():
            lo, hi = bounds[item]
            guess[item] = (float(np.clip(v * rng.uniform(0.8, 1.25), lo, hi)), lo, hi)
        res = F.fit(client, noisy, guess, preset, fixed=base, observed=obs, scale=sigma)
        lo, hi = res["interval_level"].T
        t = np.array([truth[n] for n in res["names"]])
        # a fit that says it did not converge claims no interval: counted as not covering
        res["covered"] = (lo <= t) & (t <= hi) & res["success"]
        res["truth"], res["noisy"], res["fixed"], res["obs"] = t, noisy, base, obs
        yield res


@pytest.mark.parametrize("preset,scenario,steps,sigma,count",
                         [pytest.param(*r, id=r[0]) for r in ROBOTS])
def test_fit_interval_coverage(client, preset, scenario, steps, sigma, count):
    n = int(os.environ.get("ROBOSIM_COVERAGE_N", 0)) or (200 if LONG else count)
    t0 = time.monotonic()
    per_param = None
    failed = 0
    for res in coverage(client, preset, scenario, steps, sigma, n, preset):
        failed += not res["success"]
        c = res["covered"].astype(int)
        per_param = c if per_param is None else per_param + c
    names = [k for k in scenario(np.random.default_rng(0), steps)[0]]
    figures = ", ".join("%s %.1f %%" % (nm, 100.0 * c / n) for nm, c in zip(names, per_param))
    print("\n%s: nominal 95 %% intervals cover the truth in %s of %d recordings (%d fits did "
          "not converge) in %.1f s" % (preset, figures, n, failed, time.monotonic() - t0))
    assert failed <= 0.02 * n  # a fit may say it found no fit, rarely
    # 200 recordings: 90-98 %; fewer: 95 % +- 2.6 binomial deviations (a correct 95 % interval
    # falls outside it about once in a hundred runs)
    half = 2.6 * np.sqrt(0.95 * 0.05 / n)
    lo, hi = (0.90, 0.98) if n >= 200 else (0.95 - half, min(1.0, 0.95 + half))
    for nm, c in zip(names, per_param):
        assert lo <= c / n <= hi, (preset, nm, c, n, lo, hi)
