"""Contact formulations through the server: the brick_drop preset, contact_model in GetSpec with its
bounds, switched by SetParams, and the three formulations agreeing with the closed-form impact time
sqrt(2 H / g) to their accuracy (hybrid exact, time_stepping within ts_step)."""
import math
import random

import pytest

import robosim

G, H = 9.81, 0.45


def test_brick_contact_models_over_the_wire(client):
    wid = client.create_world("brick_drop", params={"control_dt": 0.001}, seed=1)
    try:
        spec = client.get_spec(wid)
        brick = spec["entities"]["brick"]
        cm = brick["params"]["contact_model"]
        assert (cm["lower"], cm["upper"]) == (0, 2)
        for name in ("restitution", "friction", "stiffness", "damping", "padding"):
            assert name in brick["params"] and "ground_" + name in brick["params"]
        assert brick["modes"][3:5] == ["time_stepping", "compliant"]
        # the hybrid formulation's contact modes: a corner (sticking, sliding), a face
        for mode in ("flight", "pivoting", "corner_sliding", "stuck", "sliding"):
            assert mode in brick["modes"]
        t1 = math.sqrt(2 * H / G)
        for model, tol in ((0, 1e-9), (1, 1e-3), (2, 1e-9)):
            client.set_params(wid, {"brick.contact_model": model})
            s = client.reset(wid, seed=1)
            s = client.step(wid, steps=310)
            kinds = [e for e in s["events"] if e["kind"] in ("impact", "touch")]
            assert kinds, s["events"]
            # compliant touches the padding surface (2.5 mm above the ground)
            exact = t1 if model != 2 else math.sqrt(2 * (H - 0.0025) / G)
            assert abs(kinds[0]["time"] - exact) <= tol
        with pytest.raises(robosim.RobosimError):
            client.set_params(wid, {"brick.contact_model": 3})
    finally:
        client.destroy_world(wid)


def test_contact_feedback_for_the_brick_ground_pair(client):
    """Klamp't's contact feedback in State.contacts: off by default; on, a flat drop reads
    had_contact and had_separation over the impact step, and at rest in_contact with the mean
    contact force m g along the ground's normal."""
    wid = client.create_world("brick_drop", params={"control_dt": 0.01}, seed=1)
    try:
        assert client.step(wid, steps=1)["contacts"] == []
        client.set_params(wid, {"brick.contact_feedback": 1})
        k = int(math.sqrt(2 * H / G) / 0.01)  # the step holding the impact is the (k+1)th
        s = client.step(wid, steps=k - 1)
        (c,) = s["contacts"]
        assert c["entity"] == "brick" and c["other"] == "ground" and not c["had_contact"]
        s = client.step(wid, steps=1)
        (c,) = s["contacts"]
        assert c["had_contact"] and c["had_separation"] and not c["in_contact"]
        # hybrid impact: the mean force over the step is the impulse m (1 + e) v / dt
        v = G * math.sqrt(2 * H / G)
        assert c["mean_force"][1] == pytest.approx(1.5 * v / 0.01, rel=1e-9)
        s = client.step(wid, steps=300)
        (c,) = s["contacts"]
        assert c["in_contact"] and not c["had_penetration"] and c["normal"] == [0.0, 1.0]
        assert c["mean_force"][1] == pytest.approx(G, rel=1e-12)
        assert c["point"][1] == 0.0
    finally:
        client.destroy_world(wid)


def test_contact_feedback_for_the_finger_object_pair(client):
    """The (finger, object) pair: the control step holding the first impact (F = 2 N from rest,
    quadratic drag c = 1: touch at acosh(exp(1.5)) / sqrt(2) s at v1 = sqrt(2) tanh(sqrt(2) t1))
    had contact and separation (a bounce), and its mean force on the finger is the impulse
    (1 + e) m v1 / 2 over dt, pointing back along -x."""
    wid = client.create_world("finger", params={"control_dt": 0.01,
                                                "finger.contact_feedback": 1}, seed=1)
    try:
        client.set_force(wid, "finger", [2.0])
        t1 = math.acosh(math.exp(1.5)) / math.sqrt(2)
        v1 = math.sqrt(2) * math.tanh(math.sqrt(2) * t1)
        k = int(t1 / 0.01)
        (c,) = client.step(wid, steps=k)["contacts"]
        assert c["other"] == "object" and not c["had_contact"] and not c["in_contact"]
        (c,) = client.step(wid, steps=1)["contacts"]
        assert c["had_contact"] and c["had_separation"] and not c["in_contact"]
        assert c["mean_force"][0] * 0.01 == pytest.approx(-1.5 * v1 / 2, rel=1e-6)
        assert c["normal"] == [-1.0, 0.0] and not c["had_penetration"]
    finally:
        client.destroy_world(wid)


def test_contact_feedback_for_the_diff_drive_bumper(client):
    """The (robot, obstacle0) pair: reached at 0.75 / 0.09 s; then in contact, normal pointing
    back at the robot (-1, 0), the contact point on the robot's rim (0.75 + 0.15 = 0.90 m)."""
    wid = client.create_world("diff_drive", params={"robot.obstacles": [1.0, 0, 0.10],
                                                    "robot.contact_feedback": 1}, seed=1)
    try:
        client.set_force(wid, "robot", [1, 1])
        assert client.step(wid, steps=833)["contacts"] == []
        (c,) = client.step(wid, steps=1)["contacts"]
        assert c["other"] == "obstacle0" and c["in_contact"] and c["had_contact"]
        assert c["normal"] == pytest.approx([-1.0, 0.0]) and c["point"] == pytest.approx([0.90, 0])
        assert not c["had_penetration"] and c["mean_force"] == [0.0, 0.0]
    finally:
        client.destroy_world(wid)


def _tilted_drop(seed):
    """A seeded tilted drop within the brick's parameter bounds: (theta0, clearance of the lowest
    corner, omega0, restitution, friction); the first is the plain 45-degree corner drop."""
    if seed == 0:
        return 0.785, 0.45 - 0.5 * (0.2 * math.sin(0.785) + 0.1 * math.cos(0.785)) + 0.05, 0.0, 0.5, 0.5
    rng = random.Random(seed)
    return (rng.uniform(0.05, math.pi / 2 - 0.05), rng.uniform(0.02, 0.5), rng.uniform(-10, 10),
            rng.uniform(0.0, 0.6), rng.uniform(0.3, 1.2))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("model", [0, 1, 2])
def test_tilted_brick_comes_to_rest_on_a_face(client, model, seed):
    """A brick dropped on a corner (random tilt, height, spin, restitution and friction, seeded)
    comes to rest on a face under every formulation within 3 s: flat (theta a multiple of pi/2),
    at its half-extent above the contact surface (compliant: the padding less the static
    compression m g / 2k), at rest, and never below the ground."""
    th0, clearance, w0, e, mu = _tilted_drop(seed)
    if model == 2:
        mu = min(mu, 1.0)  # the compliant brick's served friction (docs/physics-edges.md)
    pad = 0.0025 if model == 2 else 0.0
    y0 = clearance + 0.5 * (0.2 * math.sin(th0) + 0.1 * math.cos(th0)) + pad
    params = {"control_dt": 0.01, "brick.contact_model": model, "brick.theta0": th0,
              "brick.y0": y0, "brick.omega0": w0, "brick.restitution": e,
              "brick.ground_restitution": e, "brick.friction": mu, "brick.ground_friction": mu}
    wid = client.create_world("brick_drop", params=params, seed=1)
    try:
        lowest = math.inf
        for _ in range(30):
            s = client.step(wid, steps=10)
            x, y, th, vx, vy, w = s["entities"]["brick"]["state"]
            half_w, half_h = 0.1, 0.05
            lowest = min(lowest, y - abs(math.sin(th)) * half_w - abs(math.cos(th)) * half_h)
        q = round(th / (math.pi / 2))
        surface = pad - G / (2 * 1e6) if model == 2 else 0.0
        assert abs(th - q * math.pi / 2) < 1e-6, (th, params)
        assert abs(y - (0.05 if q % 2 == 0 else 0.1) - surface) < 1e-6, (y, params)
        assert abs(vx) + abs(vy) + 0.2 * abs(w) < 1e-6, params
        assert lowest >= (-1e-9 if model == 0 else -1e-5), params
    finally:
        client.destroy_world(wid)
