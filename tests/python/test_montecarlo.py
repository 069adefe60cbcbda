"""Monte Carlo runs (Klamp't's monteCarloSim) through the server: seed
003's 1-link PID example on a serial-arm configuration, the same seed giving the same numbers
in a batch and run one by one (CreateWorld with the drawn values, SetForce, Step), and the
samplers' distributions."""
import math

import numpy as np
import pytest

import robosim

# Klamp't's 1-link example: PID gains kP 20, kI 8, kD 5 towards 0, the start angle drawn from
# uniform(-pi, pi), 5 s. Joint 2 is held at 0 by its own PID, so joint 1 drives a rigid arm.
ARM = {"arm.kP": [20, 20], "arm.kI": [8, 8], "arm.kD": [5, 5], "arm.tau_max": [100, 100]}
SAMPLERS = ["arm.theta0[0] ~ uniform(-pi, pi)"]
RETURNS = ["arm.theta1", "arm.theta1_dot", "arm.integral1"]


@pytest.fixture
def arm_world(client):
    wid = client.create_world("serial_arm", params=ARM, seed=0)
    yield wid
    client.destroy_world(wid)


def test_klampt_pid_example_reaches_the_target(client, arm_world):
    # 100 runs as 4 requests of 25 (first_run), within the server's compute budget per request
    parts = [client.monte_carlo(arm_world, runs=25, duration=5.0, samplers=SAMPLERS,
                                returns=RETURNS, seed=11, first_run=k) for k in range(0, 100, 25)]
    start = np.concatenate([p["initial"][:, 0] for p in parts])
    end = np.concatenate([p["final"][:, 0] for p in parts])
    assert parts[0]["final"].shape == (25, 3)
    assert all(p["time"] == pytest.approx(5.0, abs=1e-12) for p in parts)
    assert np.all((start >= -math.pi) & (start < math.pi))
    # the draws cover the interval (a uniform sample of 100: each quarter holds some)
    assert all(np.sum((start >= lo) & (start < lo + math.pi / 2)) >= 10
               for lo in (-math.pi, -math.pi / 2, 0.0, math.pi / 2))
    reached = int(np.sum(np.abs(end) < 0.05))
    print("\nKlamp't's 1-link PID example: %d of 100 runs within 0.05 rad of the target after "
          "5 s (largest |theta1| %.4f rad from a start of up to %.4f rad)"
          % (reached, np.max(np.abs(end)), np.max(np.abs(start))))
    assert np.all(np.abs(end) < 0.05 * np.abs(start) + 1e-9), "every run closes 95% of its error"
    assert reached >= 95
    # the world itself was not changed
    assert client.get_state(arm_world)["time"] == 0.0


def test_same_seed_same_numbers_in_a_batch_and_one_by_one(client, arm_world):
    client.set_force(arm_world, "arm", [0.3, -0.2])   # PID setpoints the runs hold too
    samplers = {"arm.theta0[0]": ("uniform", -math.pi, math.pi),
                "arm.theta_dot0[1]": ("normal", 0.0, 0.5)}
    a = client.monte_carlo(arm_world, 6, 1.0, samplers, RETURNS + ["arm.x"], seed=5)
    b = client.monte_carlo(arm_world, 6, 1.0, samplers, RETURNS + ["arm.x"], seed=5)
    assert np.array_equal(a["initial"], b["initial"]) and np.array_equal(a["final"], b["final"])
    c = client.monte_carlo(arm_world, 6, 1.0, samplers, RETURNS + ["arm.x"], seed=6)
    assert not np.array_equal(a["initial"], c["initial"])
    # run i of a batch of 3 is run i of the batch of 6 (a run depends on (seed, i) only)
    d = client.monte_carlo(arm_world, 3, 1.0, samplers, RETURNS + ["arm.x"], seed=5)
    assert np.array_equal(d["final"], a["final"][:3])
    e = client.monte_carlo(arm_world, 3, 1.0, samplers, RETURNS + ["arm.x"], seed=5, first_run=3)
    assert np.array_equal(e["initial"], a["initial"][3:])
    assert np.array_equal(e["final"], a["final"][3:])
    for i in range(6):
        theta0, dot0 = a["initial"][i]
        params = dict(ARM, **{"arm.theta0": [theta0, 0.0], "arm.theta_dot0": [0.0, dot0]})
        wid = client.create_world("serial_arm", params=params, seed=5 + i)
        try:
            client.set_force(wid, "arm", [0.3, -0.2])
            s = client.step(wid, duration=1.0)
            arm = s["entities"]["arm"]
            one = [arm["state"][0], arm["state"][2], arm["state"][4], arm["sensors"][0]]
            assert one == list(a["final"][i]), "run %d one by one" % i
        finally:
            client.destroy_world(wid)


def test_normal_sampler_statistics(client):
    wid = client.create_world("finger", seed=0)
    try:
        n = 400
        res = client.monte_carlo(wid, n, 0.01, ["finger.finger_x0 ~ normal(0.5, 0.1)"],
                                 ["finger.x_f"], seed=1)
        x = res["initial"][:, 0]
        # mean within 4 standard errors, deviation within 15%
        assert abs(x.mean() - 0.5) < 4 * 0.1 / math.sqrt(n)
        assert abs(x.std() - 0.1) < 0.015
        # the finger starts at the draw and, at rest with no force, stays there
        assert np.array_equal(res["final"][:, 0], x)
    finally:
        client.destroy_world(wid)


def test_bad_requests_name_the_problem(client, arm_world):
    with pytest.raises(robosim.RobosimError, match="no parameter 'nosuch'"):
        client.monte_carlo(arm_world, 2, 0.1, ["arm.nosuch ~ uniform(0, 1)"], ["arm.theta1"])
    with pytest.raises(robosim.RobosimError, match="holds 2 values"):
        client.monte_carlo(arm_world, 2, 0.1, ["arm.theta0 ~ uniform(0, 1)"], ["arm.theta1"])
    with pytest.raises(ValueError):
        client.monte_carlo(arm_world, 2, 0.1, ["arm.theta0[0] uniform 0 1"], ["arm.theta1"])



def test_runs_carry_the_task(client):
    """A MonteCarlo on a task world: each run starts the task's episode from its draws, holding
    the world's commands, so its return, flags and final state equal those of a single task
    world made with the same draws and seed and driven by the same action."""
    wid = client.create_world(task="FingerPush-v0", seed=0)
    try:
        client.step(wid, action=[1.5])  # the commands the runs hold
        samplers = {"finger.object_x0": ("uniform", 0.5, 0.9)}
        returns = ["task.return", "task.terminated", "task.truncated", "finger.x_o", "finger.v_f"]
        res = client.monte_carlo(wid, 4, 1.5, samplers, returns, seed=11)
        assert np.any(res["final"][:, 0] != 0.0), "the runs earn rewards"
        for i in range(4):
            one = client.create_world(task="FingerPush-v0", seed=11 + i,
                                      params={"finger.object_x0": float(res["initial"][i][0])})
            try:
                total, s = 0.0, None
                for k in range(100000):  # to the run's end time (or the episode's end)
                    s = client.step(one, steps=1, action=[1.5] if k == 0 else None)
                    total += s["task"]["reward"]
                    if (s["task"]["terminated"] or s["task"]["truncated"]
                            or s["time"] >= np.atleast_1d(res["time"])[-1] - 1e-12):
                        break
                f = s["entities"]["finger"]["state"]
                got = list(res["final"][i])
                assert got[0] == pytest.approx(total, rel=1e-12, abs=1e-12), "run %d return" % i
                assert got[1:3] == [float(s["task"]["terminated"]), float(s["task"]["truncated"])]
                assert got[3:] == [f[2], f[1]], "run %d state" % i
            finally:
                client.destroy_world(one)
    finally:
        client.destroy_world(wid)


def test_runs_carry_schedules(client):
    """A MonteCarlo on a world with a schedule: each run follows it, as a single world with the
    same draw, seed and schedule does, bit for bit; a plain world has no task values."""
    wid = client.create_world("finger", seed=0)
    try:
        client.set_schedule(wid, "finger", 0, [0.0, 1.0, 2.0], [0.0, 3.0, 1.0])
        samplers = {"finger.object_x0": ("uniform", 0.5, 0.9)}
        res = client.monte_carlo(wid, 3, 2.0, samplers, ["finger.x_o", "finger.v_f"], seed=3)
        for i in range(3):
            one = client.create_world("finger", seed=3 + i,
                                      params={"finger.object_x0": float(res["initial"][i][0])})
            try:
                client.set_schedule(one, "finger", 0, [0.0, 1.0, 2.0], [0.0, 3.0, 1.0])
                f = client.step(one, duration=2.0)["entities"]["finger"]["state"]
                assert list(res["final"][i]) == [f[2], f[1]], "run %d" % i
            finally:
                client.destroy_world(one)
        assert res["final"][0][1] != 0.0, "the schedule drove the finger"
        with pytest.raises(robosim.RobosimError, match="runs a task"):
            client.monte_carlo(wid, 1, 0.1, samplers, ["task.return"])
    finally:
        client.destroy_world(wid)
