"""robosim.vector: one request per step, SAME_STEP autoreset with the final observation kept,
and the same observations as separate environments stepped alike."""
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector.vector_env import AutoresetMode

import robosim


def test_vector_equals_separate_envs(endpoint, capabilities):
    n, steps, seed = 3, 215, 40  # FingerPush truncates at 200: autoreset happens
    venv = robosim.vector.make("robosim/FingerPush-v0", num_envs=n, endpoint=endpoint)
    envs = [gym.make("robosim/FingerPush-v0", endpoint=endpoint) for _ in range(n)]
    try:
        assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        assert venv.batched == ("step_batch" in capabilities["capabilities"])
        assert venv.observation_space.shape == (n, 6) and venv.action_space.shape == (n, 1)
        vobs, _ = venv.reset(seed=seed)
        sobs = [e.reset(seed=seed + i)[0] for i, e in enumerate(envs)]
        np.testing.assert_array_equal(vobs, np.stack(sobs))
        rng = np.random.default_rng(0)
        ended = 0
        for _ in range(steps):
            acts = rng.uniform(-5, 5, size=(n, 1))
            vobs, vrew, vterm, vtrunc, vinfo = venv.step(acts)
            for i, e in enumerate(envs):
                o, r, term, trunc, _ = e.step(acts[i])
                assert vrew[i] == r and vterm[i] == term and vtrunc[i] == trunc
                if term or trunc:
                    ended += 1
                    assert vinfo["_final_obs"][i]
                    np.testing.assert_array_equal(vinfo["final_obs"][i], o)
                    o, _ = e.reset()
                np.testing.assert_array_equal(vobs[i], o)
        assert ended == n, "every sub-environment was truncated and reset once"
    finally:
        venv.close()
        for e in envs:
            e.close()


def test_vector_wrong_shape_refused(endpoint):
    venv = robosim.vector.make("robosim/FingerTouch-v0", num_envs=2, endpoint=endpoint)
    try:
        venv.reset(seed=0)
        with pytest.raises(robosim.RobosimError) as e:
            venv.step(np.zeros((3, 1)))
        assert e.value.code_name == "INVALID_ARGUMENT"
        with pytest.raises(robosim.RobosimError) as e:
            venv.step(np.full((2, 1), 3.0))
        assert e.value.code_name == "OUT_OF_RANGE"
    finally:
        venv.close()


def test_step_batch_is_one_request(endpoint, capabilities):
    assert "step_batch" in capabilities["capabilities"]
    with robosim.Client(endpoint) as c:
        ids = [c.create_world(task="FingerPush-v0", seed=s) for s in (1, 2)]
        plain = c.create_world("finger")
        res = c.step_batch([{"world_id": ids[0], "action": [1.0]},
                            {"world_id": ids[1], "action": [9.0]},
                            {"world_id": plain, "commands": {"finger": [0.5]}, "steps": 3}])
        assert res[0]["task"]["observation"].shape == (6,)
        assert isinstance(res[1], robosim.RobosimError) and res[1].code_name == "OUT_OF_RANGE"
        assert res[2]["step_count"] == 3 and res[2]["task"] is None
