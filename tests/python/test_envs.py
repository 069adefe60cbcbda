"""The Gymnasium environments: check_env for every task, seeding, action checks, rendering, and
the local server they start themselves."""
import os
import time
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import robosim
from robosim.baselines import auto

TASK_IDS = ["robosim/" + t for t in robosim.TASKS]


@pytest.mark.parametrize("env_id", TASK_IDS)
def test_check_env(env_id, endpoint):
    env = gym.make(env_id, endpoint=endpoint, render_mode="rgb_array")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the recommendations on Box bounds
            check_env(env.unwrapped)
        # float32 by default (Stable-Baselines3's expectation)
        assert env.observation_space.dtype == np.float32
        assert env.action_space.dtype == np.float32
        assert env.reset(seed=0)[0].dtype == np.float32
        spec = env.unwrapped.task_spec
        assert env.action_space.shape == (len(spec["action"]),)
        assert np.all(env.action_space.low == np.float32([v["lower"] for v in spec["action"]]))
        assert "r = " in spec["reward"]
    finally:
        env.close()


@pytest.mark.parametrize("env_id", TASK_IDS)
def test_seeding_is_deterministic(env_id, endpoint):
    a = gym.make(env_id, endpoint=endpoint)
    b = gym.make(env_id, endpoint=endpoint)
    try:
        oa, _ = a.reset(seed=123)
        ob, _ = b.reset(seed=123)
        np.testing.assert_array_equal(oa, ob)
        oc, _ = b.reset(seed=124)
        assert not np.array_equal(oa, oc), "another seed starts elsewhere"
        ob, _ = b.reset(seed=123)
        rng = np.random.default_rng(7)
        for _ in range(30):
            act = rng.uniform(a.action_space.low, a.action_space.high)
            ra = a.step(act)
            rb = b.step(act)
            np.testing.assert_array_equal(ra[0], rb[0])
            assert ra[1:4] == rb[1:4]
            if ra[2] or ra[3]:
                break
        # resets without a seed follow the env's generator: the same after the same seed
        a.reset(seed=5)
        b.reset(seed=5)
        np.testing.assert_array_equal(a.reset()[0], b.reset()[0])
    finally:
        a.close()
        b.close()


def test_bad_actions_are_refused_clearly(endpoint):
    env = gym.make("robosim/DiffDriveGoal-v0", endpoint=endpoint, clip_actions=False)
    try:
        obs, _ = env.reset(seed=1)
        with pytest.raises(robosim.RobosimError) as e:
            env.step(np.zeros(3))
        assert e.value.code_name == "INVALID_ARGUMENT" and "shape (2,)" in e.value.message
        with pytest.raises(robosim.RobosimError) as e:
            env.step(np.zeros((1, 2)))
        assert e.value.code_name == "INVALID_ARGUMENT"
        with pytest.raises(robosim.RobosimError) as e:
            env.step(np.array([0.0, 10.5]))
        assert e.value.code_name == "OUT_OF_RANGE" and e.value.code == 10
        assert "phi2_dot" in e.value.message and "[-10, 10]" in e.value.message
        with pytest.raises(robosim.RobosimError) as e:
            env.step(np.array([np.nan, 0.0]))
        assert e.value.code_name == "INVALID_ARGUMENT" and "not finite" in e.value.message
        # nothing moved; a good action still works
        o2, *_ = env.step(np.array([0.0, 0.0]))
        np.testing.assert_array_equal(o2[:4], obs[:4])
    finally:
        env.close()


@pytest.mark.parametrize("env_id", TASK_IDS)
def test_render_and_baseline(env_id, endpoint):
    env = gym.make(env_id, endpoint=endpoint, render_mode="rgb_array")
    try:
        policy = auto(env.unwrapped)
        obs, _ = env.reset(seed=2)
        frame = env.render()
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
        assert frame.std() > 0, "something is drawn"
        ret, done, info = 0.0, False, {}
        while not done:
            action = policy(obs)
            # the baseline follows the task version: its actions are in the task's action space
            # as they are (nothing left for the env's clipping to cut)
            assert env.action_space.contains(np.asarray(action, dtype=env.action_space.dtype)), \
                (env_id, action)
            obs, r, term, trunc, info = env.step(action)
            ret += r
            done = term or trunc
        assert term and info["is_success"], "the scripted baseline solves %s" % env_id
        assert env.render().shape == frame.shape
    finally:
        env.close()


def test_finger_push_v1_baseline_solves_every_seed(endpoint):
    """FingerPush-v1's baseline is v0's mapped onto v1's [-1, 1] force fraction: it solves each
    of ten seeds, as v0's solves v0 (v0's policy fed to v1 as it is asks 5 N, clipped to 1)."""
    env = gym.make("robosim/FingerPush-v1", endpoint=endpoint)
    try:
        policy = auto(env)
        for seed in range(10):
            obs, _ = env.reset(seed=seed)
            done = False
            while not done:
                obs, r, term, trunc, info = env.step(policy(obs))
                done = term or trunc
            assert term and info["is_success"], seed
    finally:
        env.close()


def test_v1_baselines_read_their_scaling_from_the_spec(endpoint):
    """The -v1 baselines take the observation scales from the units GetSpec gives and v0's
    action bounds from a v0 world's TaskSpec: the scales and bounds of the tasks' table (v1's
    observation is v0's divided by the scale; v1's action in [-1, 1] spans v0's bounds)."""
    from robosim.baselines import v1_scaling
    expected = {"FingerPush-v1": ([1, 1, 1, 1, 1, 5], [-5], [5]),
                "FingerTouch-v1": ([1, 1, 0.01, 1, 1, 1], [-2], [2]),
                "SerialArmReach-v1": ([1, 1, 10, 10, 1, 1, 1, 1], [-np.pi] * 2, [np.pi] * 2),
                "DiffDriveGoal-v1": ([1] * 10, [-10, -10], [10, 10])}
    for task, (scale, low, high) in expected.items():
        env = gym.make("robosim/" + task, endpoint=endpoint)
        try:
            got = v1_scaling(env)
        finally:
            env.close()
        for g, e in zip(got, (scale, low, high)):
            assert np.allclose(g, e, rtol=1e-12, atol=0), (task, got)
    # the v0 world it reads the bounds from is gone afterwards
    with robosim.Client(endpoint) as c:
        before = len(c.list_worlds())
        env = gym.make("robosim/FingerPush-v1", endpoint=endpoint)
        try:
            v1_scaling(env)
            assert len(c.list_worlds()) == before + 1  # the env's own world only
        finally:
            env.close()


def test_parallel_arm_v1_renders_its_target(endpoint):
    """The target drawn for ParallelArmReach-v1 is in metres: its observation's 0.1 m units
    scaled by the unit GetSpec gives, the same point as v0's at the same seed, and the frame is
    the one drawn with that point (not with the observation read as metres)."""
    from robosim.render import draw_world, task_targets, unit_scale
    assert (unit_scale("0.1 m"), unit_scale("m"), unit_scale(""), unit_scale("10 rad/s"),
            unit_scale("cm"), unit_scale("1")) == (0.1, 1.0, 1.0, 10.0, 0.01, 1.0)
    v0 = gym.make("robosim/ParallelArmReach-v0", endpoint=endpoint, render_mode="rgb_array",
                  dtype=np.float64)
    v1 = gym.make("robosim/ParallelArmReach-v1", endpoint=endpoint, render_mode="rgb_array",
                  dtype=np.float64)
    try:
        obs0, _ = v0.reset(seed=4)
        obs1, _ = v1.reset(seed=4)
        spec1 = v1.unwrapped.task_spec["observation"]
        assert [spec1[i]["unit"] for i in (6, 7)] == ["0.1 m", "0.1 m"]
        point = task_targets("ParallelArmReach-v1", obs1, spec1)["point"]
        assert point == pytest.approx((0.1 * obs1[6], 0.1 * obs1[7]), abs=1e-12)
        assert point == pytest.approx((obs0[6], obs0[7]), abs=1e-9)
        frame = v1.render()
        state = v1.unwrapped.state
        assert np.array_equal(frame, draw_world(v1.unwrapped.world_spec, state,
                                                {"point": point}))
        wrong = draw_world(v1.unwrapped.world_spec, state,
                           {"point": (float(obs1[6]), float(obs1[7]))})
        assert not np.array_equal(frame, wrong)
        assert not np.array_equal(frame, draw_world(v1.unwrapped.world_spec, state, {}))
    finally:
        v0.close()
        v1.close()


@pytest.mark.parametrize("env_id", TASK_IDS)
def test_float32_by_default_float64_bit_for_bit(env_id, endpoint):
    """The default spaces are float32 (what Stable-Baselines3 wants) and check_env passes;
    dtype=np.float64 gives float64 spaces with the server's values bit for bit (those of the
    Client's own State), and the float32 observations are those rounded to float32."""
    env32 = gym.make(env_id, endpoint=endpoint)
    env64 = gym.make(env_id, endpoint=endpoint, dtype=np.float64)
    try:
        assert env32.observation_space.dtype == np.float32
        assert env32.action_space.dtype == np.float32
        assert env64.observation_space.dtype == np.float64
        assert env64.action_space.dtype == np.float64
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the recommendations on Box bounds
            check_env(env32.unwrapped)
        obs32, _ = env32.reset(seed=1)
        obs64, _ = env64.reset(seed=1)
        env32.action_space.seed(1)
        for _ in range(5):
            assert obs32.dtype == np.float32 and env32.observation_space.contains(obs32)
            assert obs64.dtype == np.float64
            assert np.array_equal(obs32, obs64.astype(np.float32))
            server = env64.unwrapped.client.get_state(env64.unwrapped.world_id)["task"]
            assert np.array_equal(obs64, server["observation"])
            a = env32.action_space.sample()
            obs32, *_ = env32.step(a)
            obs64, *_ = env64.step(a.astype(np.float64))
    finally:
        env32.close()
        env64.close()
    with pytest.raises(ValueError, match="float64 or float32"):
        robosim.RobosimEnv("FingerPush-v1", endpoint=endpoint, dtype=np.int32)


def test_float32_vector_env_by_default(endpoint):
    venv = robosim.vector.make("robosim/SerialArmReach-v1", num_envs=3, endpoint=endpoint)
    v64 = robosim.vector.make("robosim/SerialArmReach-v1", num_envs=3, endpoint=endpoint,
                              dtype=np.float64)
    try:
        assert venv.single_observation_space.dtype == np.float32
        assert venv.action_space.dtype == np.float32
        assert v64.single_observation_space.dtype == np.float64
        obs, _ = venv.reset(seed=0)
        o64, _ = v64.reset(seed=0)
        assert obs.dtype == np.float32 and venv.observation_space.contains(obs)
        assert o64.dtype == np.float64 and np.array_equal(obs, o64.astype(np.float32))
        a = venv.action_space.sample()
        obs, *_ = venv.step(a)
        o64, *_ = v64.step(a.astype(np.float64))
        assert obs.dtype == np.float32 and venv.observation_space.contains(obs)
        assert o64.dtype == np.float64 and np.array_equal(obs, o64.astype(np.float32))
    finally:
        venv.close()
        v64.close()


def test_record_video_headless(endpoint, tmp_path):
    pytest.importorskip("moviepy")
    env = gym.wrappers.RecordVideo(
        gym.make("robosim/FingerPush-v1", endpoint=endpoint, render_mode="rgb_array"),
        str(tmp_path / "videos"), episode_trigger=lambda i: True, disable_logger=True)
    env.reset(seed=0)
    for _ in range(10):
        env.step(env.action_space.sample())
    env.close()
    assert list((tmp_path / "videos").glob("*.mp4"))


def test_local_server_started_and_stopped():
    env = gym.make("robosim/FingerTouch-v0")  # no endpoint: a server of its own
    server = env.unwrapped._server
    assert server is not None and server.endpoint.startswith("tcp://127.0.0.1:")
    proc = server.proc
    try:
        env.reset(seed=0)
        env.step(np.array([0.1]))
    finally:
        env.close()
    assert proc.poll() is not None, "close() stops the server"
    env.close()  # twice is fine


def test_unknown_task_and_params(endpoint):
    with pytest.raises(robosim.RobosimError) as e:
        robosim.RobosimEnv("NoSuchTask-v0", endpoint=endpoint)
    assert e.value.code_name == "NOT_FOUND" and "FingerPush-v0" in e.value.message
    env = robosim.RobosimEnv("FingerPush-v0", endpoint=endpoint, params={"control_dt": 0.02})
    try:
        assert env.world_spec["world"]["control_dt"] == 0.02
        assert env.metadata["render_fps"] == 50
    finally:
        env.close()


def test_actions_clipped_and_normalized(endpoint):
    """A float32 policy output at a bound (float32 pi > pi) and one beyond the bounds are
    clipped, stepping exactly as the bound itself does; normalize_actions maps [-1, 1] onto the
    bounds linearly."""
    kw = dict(endpoint=endpoint)
    a, b = gym.make("robosim/SerialArmReach-v0", **kw), gym.make("robosim/SerialArmReach-v0", **kw)
    n = gym.make("robosim/SerialArmReach-v0", normalize_actions=True, **kw)
    try:
        assert float(np.float32(np.pi)) > np.pi
        assert n.action_space.low.tolist() == [-1, -1] and n.action_space.high.tolist() == [1, 1]
        for e in (a, b, n):
            e.reset(seed=3)
        ra = a.step(np.array([np.float32(np.pi), -7.0], dtype=np.float32))
        rb = b.step(np.array([np.pi, -np.pi]))
        rn = n.step(np.array([1.0, -1.0]))
        np.testing.assert_array_equal(ra[0], rb[0])
        np.testing.assert_array_equal(rn[0], rb[0])
        ra = a.step(np.array([0.0, np.pi / 2]))
        rn = n.step(np.array([0.0, 0.5]))  # the middle of [-pi, pi]; three quarters up
        np.testing.assert_array_equal(ra[0], rn[0])
    finally:
        for e in (a, b, n):
            e.close()


def test_env_order_errors_and_close_twice(endpoint):
    env = robosim.RobosimEnv("FingerTouch-v0", endpoint=endpoint)
    with pytest.raises(robosim.RobosimError) as e:
        env.step(np.array([0.1]))
    assert e.value.code_name == "FAILED_PRECONDITION" and "reset() before step()" in e.value.message
    env.reset(seed=0)
    env.step(np.array([0.1]))
    env.close()
    env.close()
    with pytest.raises(robosim.RobosimError) as e:
        env.reset()
    assert e.value.code_name == "FAILED_PRECONDITION" and "after close()" in e.value.message
    with pytest.raises(robosim.RobosimError) as e:
        env.step(np.array([0.1]))
    assert e.value.code_name == "FAILED_PRECONDITION"


@pytest.mark.parametrize("task", robosim.TASKS)
def test_registered_episode_limit(task, endpoint):
    """The registration carries the server task's own limit (what RobosimEnv made directly
    truncates at), and gym.make's TimeLimit applies it."""
    env = robosim.RobosimEnv(task, endpoint=endpoint)
    made = gym.make("robosim/" + task, endpoint=endpoint)
    try:
        assert gym.spec("robosim/" + task).max_episode_steps == env.max_episode_steps
        assert made.spec.max_episode_steps == env.max_episode_steps
        assert env.task_spec["max_episode_steps"] == robosim.envs.TASK_LIMITS[task]
    finally:
        env.close()
        made.close()


def test_episode_limits_are_read_from_the_server(endpoint, monkeypatch):
    """No limit is copied into the package: a fresh import knows none; the first gym.make of a
    task learns it from its world's TaskSpec (and its TimeLimit truncates there, the server's
    own limit lifted); gym.spec before any env asks a server ($ROBOSIM_ENDPOINT's here) for
    every task's (fetch_task_limits); a limit once known is the one used."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import robosim; print(robosim.envs.TASK_LIMITS)"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "{}"
    monkeypatch.setattr(robosim.envs, "TASK_LIMITS", {})
    env = gym.make("robosim/FingerPush-v0", endpoint=endpoint)
    try:
        assert robosim.envs.TASK_LIMITS == {"FingerPush-v0": 200}
        assert env.spec.max_episode_steps == 200
        assert env.unwrapped.task_spec["max_episode_steps"] == robosim.envs.NO_LIMIT
        assert _steps_to_truncation(env) == 200
    finally:
        env.close()
    monkeypatch.setattr(robosim.envs, "TASK_LIMITS", {})
    monkeypatch.setenv("ROBOSIM_ENDPOINT", endpoint)
    assert gym.spec("robosim/DiffDriveGoal-v1").max_episode_steps == 300
    assert robosim.envs.TASK_LIMITS["MobileAlign-v0"] == 3000  # all of them, in one go
    for mode in ("sync", "vector_entry_point"):
        venv = gym.make_vec("robosim/DiffDriveGoal-v1", 2, vectorization_mode=mode)
        try:
            if mode == "sync":
                assert venv.envs[0].spec.max_episode_steps == 300
            else:
                assert venv.task_spec["max_episode_steps"] == 300
        finally:
            venv.close()
    monkeypatch.setattr(robosim.envs, "TASK_LIMITS", {"FingerTouch-v1": 7})
    assert gym.spec("robosim/FingerTouch-v1").max_episode_steps == 7  # the table, when filled
    with robosim.Client(endpoint) as c:
        tasks = c.hello()["tasks"]
    got = robosim.envs.fetch_task_limits(endpoint)
    assert set(got) == set(tasks) and got["MobileAlign-v0"] == 3000
    assert got["FingerTouch-v1"] == 7  # what was known is kept


def _steps_to_truncation(env):
    env.reset(seed=0)
    n, trunc = 0, False
    while not trunc:
        _, _, term, trunc, _ = env.step(np.array([0.0]))  # the object never moves: no success
        assert not term
        n += 1
    return n


@pytest.mark.parametrize("limit", [7, 230])
def test_max_episode_steps_longer_or_shorter(limit, endpoint):
    """gym.make(..., max_episode_steps=N) truncates at N, beyond the server task's 200 too (the
    server's limit is lifted); RobosimEnv(max_episode_steps=N) has the server truncate at N."""
    env = gym.make("robosim/FingerPush-v0", endpoint=endpoint, max_episode_steps=limit)
    try:
        assert _steps_to_truncation(env) == limit
        assert _steps_to_truncation(env) == limit  # and again after a reset
    finally:
        env.close()
    env = robosim.RobosimEnv("FingerPush-v0", endpoint=endpoint, max_episode_steps=limit)
    try:
        assert env.task_spec["max_episode_steps"] == limit
        assert _steps_to_truncation(env) == limit
        assert env.state["task"]["truncated"]
        with pytest.raises(robosim.RobosimError) as e:  # the server's episode ended there
            env.step(np.array([0.0]))
        assert e.value.code_name == "FAILED_PRECONDITION" and "truncated" in e.value.message
    finally:
        env.close()


def test_env_pickles_by_reconnecting(endpoint):
    import cloudpickle  # a dependency of gymnasium
    env = gym.make("robosim/FingerPush-v0", endpoint=endpoint)
    try:
        o1, _ = env.reset(seed=9)
        copy = cloudpickle.loads(cloudpickle.dumps(env))
        try:
            assert copy.unwrapped.world_id != env.unwrapped.world_id
            assert copy.unwrapped.endpoint == endpoint
            o2, _ = copy.reset(seed=9)
            np.testing.assert_array_equal(o1, o2)
            np.testing.assert_array_equal(env.step(np.array([1.0]))[0],
                                          copy.step(np.array([1.0]))[0])
        finally:
            copy.close()
    finally:
        env.close()
    own = robosim.RobosimEnv("FingerTouch-v0")  # a server of its own: the copy gets another
    try:
        copy = cloudpickle.loads(cloudpickle.dumps(own))
        try:
            assert copy._server is not None and copy.endpoint != own.endpoint
            copy.reset(seed=1)
        finally:
            copy.close()
    finally:
        own.close()


def test_parallel_arm_v1_needs_control(endpoint):
    """ParallelArmReach-v1: the action is the servo torque as a fraction of 0.5 N*m; the
    observation is v0's scaled (rates / 10 rad/s, positions / 0.1 m); the reward a tenth of
    v0's formula. Holding still never succeeds; the PD baseline succeeds, over several steps."""
    env = gym.make("robosim/ParallelArmReach-v1", endpoint=endpoint)
    u = env.unwrapped
    try:
        assert env.action_space.low.tolist() == [-1, -1] and env.action_space.high.tolist() == [1, 1]
        assert np.isfinite(env.observation_space.high).all()
        obs, _ = env.reset(seed=4)
        obs, r, term, trunc, info = env.step(np.array([1.0, -0.5]))
        s = u.state["entities"]["delta"]
        sensors = dict(zip(u._sensor_names["delta"], s["sensors"]))
        assert sensors["tau1"] == pytest.approx(0.5) and sensors["tau2"] == pytest.approx(-0.25)
        np.testing.assert_allclose(obs[2:4], s["state"][2:4] / 10.0)
        np.testing.assert_allclose(obs[4:6], [sensors["x"] / 0.1, sensors["y"] / 0.1])
        assert r == pytest.approx(0.1 * (-20 * info["distance"] - 0.01 * info["effort"]))
        env.reset(seed=5)
        for _ in range(200):
            _, _, term, trunc, _ = env.step(np.zeros(2))
            assert not term, "holding still reached the target"
            if trunc:
                break
        assert trunc
        policy = auto(u)
        for seed in range(5):
            obs, _ = env.reset(seed=seed)
            n, term, trunc = 0, False, False
            while not (term or trunc):
                obs, r, term, trunc, info = env.step(policy(obs))
                n += 1
            assert term and info["is_success"] and n >= 4, (seed, n)
    finally:
        env.close()


V1_SCALES = {"FingerPush-v1": [1, 1, 1, 1, 1, 5], "FingerTouch-v1": [1, 1, 0.01, 1, 1, 1],
             "SerialArmReach-v1": [1, 1, 10, 10, 1, 1, 1, 1],
             "DiffDriveGoal-v1": [1] * 10}  # v0 is in metres too (protocol 1.2)


@pytest.mark.parametrize("v1", sorted(V1_SCALES))
def test_v1_is_v0_normalized(v1, endpoint):
    """A -v1 task steps as its v0 does: action a in [-1, 1] is v0's low + (a + 1)/2 (high -
    low); the observation is v0's divided by its scale (angles wrapped for the serial arm),
    within the finite bounds; the reward a tenth of v0's."""
    v0 = v1[:-1] + "0"
    e0 = gym.make("robosim/" + v0, endpoint=endpoint, dtype=np.float64)
    e1 = gym.make("robosim/" + v1, endpoint=endpoint, dtype=np.float64)
    try:
        low, high = e0.action_space.low, e0.action_space.high
        assert (e1.action_space.low == -1).all() and (e1.action_space.high == 1).all()
        assert np.isfinite(e1.observation_space.low).all()
        assert np.isfinite(e1.observation_space.high).all()
        scale = np.array(V1_SCALES[v1], dtype=np.float64)
        o0, _ = e0.reset(seed=8)
        o1, _ = e1.reset(seed=8)
        rng = np.random.default_rng(1)
        for _ in range(20):
            a = rng.uniform(-1, 1, size=e1.action_space.shape)
            o0, r0, t0, tr0, _ = e0.step(low + (a + 1) / 2 * (high - low))
            o1, r1, t1, tr1, _ = e1.step(a)
            want = o0 / scale
            if v1.startswith("SerialArm"):
                want[:2] = np.arctan2(np.sin(o0[:2]), np.cos(o0[:2]))
            want = np.clip(want, e1.observation_space.low, e1.observation_space.high)
            np.testing.assert_allclose(o1, want, rtol=1e-12, atol=1e-12)
            assert r1 == pytest.approx(0.1 * r0, rel=1e-12, abs=1e-15)
            assert (t1, tr1) == (t0, tr0)
            assert e1.observation_space.contains(o1)
    finally:
        e0.close()
        e1.close()


@pytest.mark.parametrize("env_id,has_events", [("robosim/FingerPush-v0", True),
                                               ("robosim/DiffDriveGoal-v0", False),
                                               ("robosim/ParallelArmReach-v1", False)])
def test_step_info_is_the_state_and_full_info_false_drops_the_detail(env_id, has_events,
                                                                     endpoint):
    """info holds the State's task figures, is_success, events, every entity's sensors by name
    and the time, as env.state (the State decoded the general way) has them, over a baseline
    episode (with events where the task has them: the finger's touch); full_info=False gives
    the same step without the events and sensors (the same observations, rewards and figures),
    and passes check_env."""
    full = gym.make(env_id, endpoint=endpoint)
    brief = gym.make(env_id, endpoint=endpoint, full_info=False)
    try:
        policy = auto(full.unwrapped)
        names = full.unwrapped._sensor_names
        (obs, info), (obs_b, info_b) = full.reset(seed=4), brief.reset(seed=4)
        done, n_events = False, 0
        while not done:
            action = policy(obs)
            obs, r, term, trunc, info = full.step(action)
            obs_b, r_b, term_b, trunc_b, info_b = brief.step(action)
            st = full.unwrapped.state
            figures = st["task"]["info"]
            assert {k: info[k] for k in figures} == figures
            if "success" in figures:
                assert info["is_success"] == (figures["success"] != 0.0)
            assert info["events"] == st["events"] and info["time"] == st["time"]
            assert info["sensors"] == {e: dict(zip(names[e], v["sensors"].tolist()))
                                       for e, v in st["entities"].items()}
            n_events += len(info["events"])
            assert set(info) == set(figures) | {"events", "sensors", "time"} | (
                {"is_success"} if "success" in figures else set())
            np.testing.assert_array_equal(obs, obs_b)
            assert (r, term, trunc) == (r_b, term_b, trunc_b)
            assert info_b == {k: v for k, v in info.items() if k not in ("events", "sensors")}
            done = term or trunc
        assert (n_events > 0) == has_events, "the episode's events reach info"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the recommendations on Box bounds
            check_env(brief.unwrapped)
    finally:
        full.close()
        brief.close()


def test_info_builder_reads_entities_by_name_when_the_state_differs():
    """The info builder reads sensors by position in the spec's entity order, and by name when a
    State holds other entities than the spec's; without "success" there is no is_success."""
    from robosim._proto import pb
    from robosim.envs import info_builder
    spec = [("a", ["f"]), ("b", ["x", "y"])]
    s = pb.State(time=0.5, entities=[pb.EntityState(name="a", sensors=[1.0]),
                                     pb.EntityState(name="b", sensors=[2.0, 3.0])],
                 task=pb.TaskStep(info_keys=["distance"], info_values=[0.25]))
    full = info_builder(["distance"], spec)
    assert full(s, s.task) == {"distance": 0.25, "events": [], "time": 0.5,
                               "sensors": {"a": {"f": 1.0}, "b": {"x": 2.0, "y": 3.0}}}
    only_b = pb.State(time=1.0, entities=[pb.EntityState(name="b", sensors=[4.0, 5.0])],
                      task=pb.TaskStep(info_keys=["distance"], info_values=[0.5]))
    assert full(only_b, only_b.task)["sensors"] == {"b": {"x": 4.0, "y": 5.0}}
    one = info_builder(["distance", "success"], spec[:1])
    s1 = pb.State(time=0.1, entities=[pb.EntityState(name="a", sensors=[7.0])],
                  task=pb.TaskStep(info_keys=["distance", "success"], info_values=[0.1, 1.0]))
    assert one(s1, s1.task) == {"distance": 0.1, "success": 1.0, "is_success": True,
                                "events": [], "sensors": {"a": {"f": 7.0}}, "time": 0.1}
    brief = info_builder(["distance", "success"], spec[:1], full=False)
    assert brief(s1, s1.task) == {"distance": 0.1, "success": 1.0, "is_success": True,
                                  "time": 0.1}
