"""A Step's Jacobian through the protocol (Client.step(jacobian=True)): against central finite
differences of whole Steps made through the same client, across the finger's touch; parameter
columns; a grazing touch reported as not differentiable; the other contact formulations and
unknown parameters refused with their codes."""
import numpy as np
import pytest

import robosim

TIGHT = {"rtol": 1e-13, "atol": 1e-14, "erk_order": 8}
TOUCH = dict(TIGHT, **{"finger.object_x0": [0.004], "finger.finger_v0": [1.0],
                       "finger.restitution": [0.5]})


def final_state(client, params, force=0.2, steps=3):
    wid = client.create_world("finger", params=params)
    try:
        s = client.step(wid, steps=steps, commands={"finger": [force]})
        return s["entities"]["finger"]["state"]
    finally:
        client.destroy_world(wid)


def test_jacobian_matches_finite_differences(client):
    wid = client.create_world("finger", params=TOUCH)
    s = client.step(wid, steps=3, commands={"finger": [0.2]}, jacobian=True,
                    jacobian_params=["finger.restitution", "finger.finger_mass"])
    client.destroy_world(wid)
    j = s["jacobian"]
    assert j["differentiable"]
    assert [e["kind"] for e in s["events"]][:2] == ["touch", "bounce"]
    assert j["state"].shape == (6, 6) and j["commands"].shape == (6, 1)
    # the columns of x_f (through finger_x0), v_f (finger_v0), the force, and two parameters
    base = {"finger.finger_x0": 0.0, "finger.finger_v0": 1.0, "finger.restitution": 0.5,
            "finger.finger_mass": 1.0}
    columns = {"finger.finger_x0": j["state"][:, 0], "finger.finger_v0": j["state"][:, 1],
               "finger.restitution": j["params"]["finger.restitution"],
               "finger.finger_mass": j["params"]["finger.finger_mass"]}
    h = 1e-4
    for name, col in columns.items():
        fd = []
        for k in (1, -1):
            p = dict(TOUCH)
            p[name] = [base[name] + k * h]
            fd.append(final_state(client, p))
        num = (fd[0] - fd[1]) / (2 * h)
        np.testing.assert_allclose(col, num, rtol=0, atol=1e-6 * max(1, np.abs(num).max()),
                                   err_msg=name)
    fd = [final_state(client, TOUCH, force=0.2 + k * h) for k in (1, -1)]
    np.testing.assert_allclose(j["commands"][:, 0], (fd[0] - fd[1]) / (2 * h), rtol=0,
                               atol=1e-6)


def test_grazing_touch_not_differentiable(client):
    wid = client.create_world("finger", params={"finger.object_x0": [1e-13]})
    s = client.step(wid, steps=1, commands={"finger": [1.0]}, jacobian=True)
    assert s["jacobian"]["differentiable"] is False
    assert "grazing" in s["jacobian"]["not_differentiable"]
    assert s["jacobian"]["state"] is None


def test_refusals(client):
    wid = client.create_world("finger", params={"finger.contact_model": [1]})
    with pytest.raises(robosim.RobosimError, match="time_stepping") as e:
        client.step(wid, steps=1, jacobian=True)
    assert e.value.code_name == "UNIMPLEMENTED"
    wid = client.create_world("finger")
    with pytest.raises(robosim.RobosimError, match="nosuch") as e:
        client.step(wid, steps=1, jacobian_params=["finger.nosuch"])
    assert e.value.code_name == "NOT_FOUND"
    # a refused Step changes nothing
    assert client.get_state(wid)["step_count"] == 0


def test_task_world_jacobian(client):
    wid = client.create_world(task="SerialArmReach-v1")
    client.reset(wid, seed=3)
    s = client.step(wid, steps=2, action=[0.3, -0.2], jacobian=True)
    j = s["jacobian"]
    n = sum(len(e["state"]) for e in s["entities"].values())
    assert j["differentiable"] and j["state"].shape == (n, n)
    assert np.all(np.isfinite(j["state"])) and np.abs(j["commands"]).max() > 0


def test_step_batch_item_with_jacobian_refused(client):
    """A StepBatch does not serve Jacobians: its item says so (UNIMPLEMENTED), the others run."""
    from robosim._proto import pb
    a, b = client.create_world("finger"), client.create_world("finger")
    msg = pb.StepBatch()
    msg.items.items.add(world_id=a, token=client._tokens[a], step=pb.Step(steps=1, jacobian=True))
    msg.items.items.add(world_id=b, token=client._tokens[b], step=pb.Step(steps=1))
    r = client._call("step_batch", msg)
    first, second = r.results
    assert first.WhichOneof("result") == "error" and first.error.code == 7  # UNIMPLEMENTED
    assert "StepBatch" in first.error.message
    assert second.WhichOneof("result") == "state" and second.state.step_count == 1


def test_jacobian_step_keeps_the_compute_budget():
    """A Step with its Jacobian runs off the server's loop and stops at its compute budget
    (DEADLINE_EXCEEDED, the world as it was before the Step); another client is answered
    meanwhile, not after it."""
    import threading
    import time
    from robosim.server import LocalServer
    with LocalServer(args=["--max-request-seconds", "0.3"]) as server:
        with robosim.Client(server.endpoint, timeout=60) as c, \
                robosim.Client(server.endpoint, timeout=60) as other:
            wid = c.create_world("serial_arm", seed=1)
            out = {}

            def run():
                try:
                    c.step(wid, steps=1_000_000, jacobian=True)
                except robosim.RobosimError as exc:
                    out["code"] = exc.code_name
                    out["at"] = time.monotonic()
            th = threading.Thread(target=run)
            th.start()
            time.sleep(0.05)
            other.hello()
            answered = time.monotonic()
            th.join()
            assert out.get("code") == "DEADLINE_EXCEEDED", out
            # answered before the Step's reply (at its 0.3 s budget), not after it: an order,
            # which a busy machine does not change as it does a fixed wait
            assert answered < out["at"], (answered, out["at"])
            st = c.get_state(wid)
            assert st["step_count"] == 0
