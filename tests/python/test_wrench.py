"""ApplyWrench through the server: an external force for the next control
step only, equal to commanding that force for the step; the serial arm's tip force; errors."""
import pytest

import robosim


def test_wrench_on_the_finger_is_a_one_step_push(client):
    a = client.create_world("finger", seed=0)
    b = client.create_world("finger", seed=0)
    try:
        client.apply_wrench(a, "finger", "finger", [0.7])
        sa = client.step(a, steps=1)
        sb = client.step(b, steps=1, commands={"finger": [0.7]})
        assert list(sa["entities"]["finger"]["state"]) == list(sb["entities"]["finger"]["state"])
        assert list(sa["entities"]["finger"]["commands"]) == [0.0]  # the command is untouched
        client.set_force(b, "finger", [0.0])
        sa, sb = client.step(a, steps=50), client.step(b, steps=50)
        assert list(sa["entities"]["finger"]["state"]) == list(sb["entities"]["finger"]["state"])
        assert sa["entities"]["finger"]["state"][1] > 0          # it coasts on
    finally:
        client.destroy_world(a)
        client.destroy_world(b)


def test_wrench_on_the_finger_object(client):
    """A force F on the free object (no friction, no drag) for one control step: v_o = F dt / m_o,
    x_o moves by F dt^2 / (2 m_o), the finger does not feel it; then the object coasts."""
    params = {"finger.static_friction": 0.0, "finger.kinetic_friction": 0.0,
              "finger.object_drag": 0.0, "finger.object_mass": 2.0, "control_dt": 0.01}
    w = client.create_world("finger", params=params, seed=0)
    try:
        client.apply_wrench(w, "finger", "object", [3.0])
        x_f, v_f, x_o, v_o = client.step(w, steps=1)["entities"]["finger"]["state"][:4]
        assert v_o == pytest.approx(3.0 * 0.01 / 2.0, rel=1e-9)
        assert x_o - 1.5 == pytest.approx(3.0 * 0.01 ** 2 / 4.0, rel=1e-9)
        assert (x_f, v_f) == (0.0, 0.0)
        s = client.step(w, steps=10)
        assert s["entities"]["finger"]["state"][3] == pytest.approx(0.015, rel=1e-9)
    finally:
        client.destroy_world(w)


def test_wrench_on_the_arm_tip_moves_it_that_way(client):
    w = client.create_world("serial_arm", params={"arm.gravity": 0.0, "arm.actuator_mode": [0, 0]})
    try:
        client.apply_wrench(w, "arm", "end_effector", [0.0, 0.5, 0.0])
        s = client.step(w, steps=1)
        assert s["entities"]["arm"]["sensors"][3] > 0    # vy: pushed up at the tip
        v1 = s["entities"]["arm"]["state"][2]
        s = client.step(w, steps=1)                      # no wrench now: it coasts
        assert s["entities"]["arm"]["state"][2] == pytest.approx(v1, rel=0.05)
    finally:
        client.destroy_world(w)


def test_bad_wrenches(client):
    w = client.create_world("finger")
    try:
        with pytest.raises(robosim.RobosimError, match="its bodies: 'finger'.*'object'"):
            client.apply_wrench(w, "finger", "surface", [1.0])
        with pytest.raises(robosim.RobosimError, match="has 1 values"):
            client.apply_wrench(w, "finger", "finger", [1.0, 2.0])
    finally:
        client.destroy_world(w)
