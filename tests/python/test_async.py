"""Pipelined columnar StepBatches (Client.send_arrays / recv_arrays) and the vector env's async
mode on them (EnvPool's async_reset / send / recv): the same bits as the synchronous path for
the same actions, the right sub-environments in every answer, nothing left in flight at close;
and the wire code under them checked against the generated protobuf classes."""
import gc

import numpy as np
import pytest

import robosim
from robosim import _wire
from robosim._proto import pb


def _columns_equal(fast, slow, n):
    """read_arrays_reply's columns against the step_arrays dict of the same worlds."""
    for key in ("observation", "state", "sensors", "info"):
        np.testing.assert_array_equal(fast[key], slow[key])
    np.testing.assert_array_equal(fast["reward"], slow["reward"])
    np.testing.assert_array_equal(fast["terminated"], slow["terminated"])
    np.testing.assert_array_equal(fast["truncated"], slow["truncated"])
    np.testing.assert_array_equal(fast["time"], slow["time"])
    np.testing.assert_array_equal(fast["step_count"], slow["step_count"])
    np.testing.assert_array_equal(fast["events"], slow["events"])
    assert [fast["digests"][32 * i:32 * i + 32].hex() for i in range(n)] == slow["digest"]
    assert fast["info_keys"] == slow["info_keys"]


def test_send_recv_arrays_equal_step_arrays(endpoint):
    """Two worlds sets stepped alike, one with step_arrays and one with pipelined
    send_arrays: bit-identical columns; the answers matched to their requests by id whatever
    order they come in; a call made while batches are in flight loses none of their answers."""
    n = 8
    with robosim.Client(endpoint, timeout=30) as c:
        a = [c.create_world(task="FingerPush-v1", seed=3 + i) for i in range(n)]
        b = [c.create_world(task="FingerPush-v1", seed=3 + i) for i in range(n)]
        try:
            rng = np.random.default_rng(1)
            ra, rb = c.arrays_request(b[:4]), c.arrays_request(b[4:])
            for step in range(6):
                acts = rng.uniform(-1, 1, size=(n, 1))  # FingerPush-v1's action bounds
                reset = np.zeros(n, dtype=bool)
                seeds = np.zeros(n, dtype=np.uint64)
                if step == 3:  # a reset in the same request, reseeded
                    reset[[1, 6]] = True
                    seeds[[1, 6]] = [2 ** 40 + 7, 123456789012345]
                want = c.step_arrays(a, actions=acts, reset=reset, reset_seeds=seeds)
                assert not want["errors"]
                rid1 = c.send_arrays(None, actions=acts[:4], reset=reset[:4],
                                     reset_seeds=seeds[:4], request=ra)
                rid2 = c.send_arrays(b[4:], actions=acts[4:], reset=reset[4:],
                                     reset_seeds=seeds[4:])
                assert c.in_flight == 2 and rid2 != rid1
                if step == 2:  # a plain call between: its reply skips past theirs
                    assert c.get_state(b[0])["world_id"] == b[0]
                got = dict([c.recv_arrays(), c.recv_arrays()])
                assert set(got) == {rid1, rid2} and c.in_flight == 0
                assert not got[rid1]["errors"] and not got[rid2]["errors"]
                fast = {k: (np.concatenate([got[rid1][k], got[rid2][k]])
                            if isinstance(got[rid1][k], np.ndarray) else
                            got[rid1][k] + got[rid2][k] if k == "digests" else got[rid1][k])
                        for k in got[rid1] if k != "errors"}
                _columns_equal(fast, want, n)
            with pytest.raises(robosim.RobosimError) as err:
                c.recv_arrays()
            assert err.value.code_name == "FAILED_PRECONDITION"
            with pytest.raises(ValueError):
                c.send_arrays(None, actions=np.zeros((3, 1)), request=ra)  # 3 rows, 4 worlds
        finally:
            for w in a + b:
                c.destroy_world(w)


def test_recv_arrays_refused_world_takes_general_path(endpoint):
    """A world the server refuses in a pipelined batch: its code and error come back, the
    other worlds still ran (the reader leaves that reply to the generated classes)."""
    with robosim.Client(endpoint, timeout=30) as c:
        w = c.create_world(task="FingerPush-v1", seed=1)
        try:
            req = _wire.ArraysRequest([w, w + 10 ** 6], [c.token(w), ""])
            rid = c._ids.__next__()
            c._sock.send(req.encode(rid, actions=np.zeros((2, 1))))
            c._inflight[rid] = (c._sock, 2)
            got_rid, cols = c.recv_arrays()
            assert got_rid == rid and list(cols["errors"]) == [1]
            assert cols["errors"][1].code_name == "NOT_FOUND"
            assert list(cols["codes"]) == [0, pb.NOT_FOUND]
            assert np.isfinite(cols["observation"][0]).all()
        finally:
            c.destroy_world(w)


@pytest.mark.parametrize("batch_size", [2, 8])
def test_async_vector_equals_sync(endpoint, batch_size):
    """The async vector env (groups of batch_size, recv'd in whatever order the server answers)
    against the sync one, the same seeds and actions: bit-identical observations, rewards,
    terminations and truncations at every step, across NEXT_STEP autoresets (episodes of 4
    steps); each recv names one whole group, and every group comes back once per send."""
    n, steps = 8, 11
    kw = dict(endpoint=endpoint, max_episode_steps=4, dtype=np.float64)
    sync = robosim.vector.make("FingerPush-v1", num_envs=n, **kw)
    asy = robosim.vector.make("FingerPush-v1", num_envs=n, batch_size=batch_size, **kw)
    try:
        acts = np.random.default_rng(5).uniform(-5, 5, size=(steps, n, 1))
        want = [sync.reset(seed=11)[0].copy()]
        rewards, terms, truncs = [None], [None], [None]
        for t in range(steps):
            o, r, te, tr, _ = sync.step(acts[t])
            want.append(o.copy())
            rewards.append(r.copy())
            terms.append(te.copy())
            truncs.append(tr.copy())
        assert any(x.any() for x in truncs[1:])  # the autoreset path was taken
        asy.async_reset(seed=11)
        groups = n // batch_size
        seen = np.zeros(groups, dtype=int)
        while (seen <= steps).any():
            obs, rew, term, trunc, info = asy.recv()
            ids = info["env_id"]
            g = int(ids[0]) // batch_size
            np.testing.assert_array_equal(ids, np.arange(g * batch_size, (g + 1) * batch_size))
            t = seen[g]
            np.testing.assert_array_equal(obs, want[t][ids])
            if t:
                np.testing.assert_array_equal(rew, rewards[t][ids])
                np.testing.assert_array_equal(term, terms[t][ids])
                np.testing.assert_array_equal(trunc, truncs[t][ids])
            seen[g] += 1
            if t < steps:
                asy.send(acts[t][ids], ids if g % 2 else None)  # by id, or the last recv'd
        assert (seen == steps + 1).all() and asy.client.in_flight == 0
    finally:
        sync.close()
        asy.close()


def test_async_vector_misuse_refused(endpoint):
    venv = robosim.vector.make("FingerPush-v1", num_envs=4, batch_size=2, endpoint=endpoint)
    try:
        with pytest.raises(robosim.RobosimError):
            venv.recv()  # nothing in flight
        venv.async_reset(seed=0)
        with pytest.raises(robosim.RobosimError) as err:
            venv.step(np.zeros((4, 1)))
        assert err.value.code_name == "FAILED_PRECONDITION" and "in flight" in err.value.message
        _, _, _, _, info = venv.recv()
        with pytest.raises(ValueError):
            venv.send(np.zeros((2, 1)), [1, 2])  # not a group
        other = np.setdiff1d(np.arange(4), info["env_id"])
        with pytest.raises(robosim.RobosimError):
            venv.send(np.zeros((2, 1)), other)  # that group is still in flight
        with pytest.raises(robosim.RobosimError):
            venv.send(np.zeros((3, 1)), info["env_id"])  # wrong shape
    finally:
        venv.close()
    with pytest.raises(ValueError):
        robosim.vector.make("FingerPush-v1", num_envs=4, batch_size=3, endpoint=endpoint)


def test_async_close_leaves_nothing_in_flight(endpoint):
    """close() with every group in flight: their answers are read, the worlds destroyed, and
    the server serves on."""
    venv = robosim.vector.make("FingerPush-v1", num_envs=6, batch_size=2, endpoint=endpoint)
    ids = list(venv.world_ids)
    client = venv.client
    venv.async_reset(seed=3)
    assert client.in_flight == 3
    venv.close()
    assert client.in_flight == 0 and venv._sent == {}
    with robosim.Client(endpoint) as c:
        assert not set(ids) & {w["world_id"] for w in c.list_worlds()}
        assert c.hello()["major"] == 1


def test_arrays_request_parses_to_protobuf():
    """ArraysRequest's bytes against the Request protobuf builds: ids, tokens, actions,
    commands, reset flags and seeds across varint widths."""
    rng = np.random.default_rng(2)
    ids = [1, 127, 128, 2 ** 14, 2 ** 40, 2 ** 63 + 1]
    tokens = ["", "0123456789abcdef0123456789abcdef", "t", "", "x" * 200, "y"]
    req = _wire.ArraysRequest(ids, tokens, steps=3)
    for rid in (1, 300, 2 ** 35):
        acts = rng.normal(size=(6, 2))
        reset = rng.random(6) < 0.5
        seeds = np.array([0, 1, 127, 128, 2 ** 62, 2 ** 64 - 1], dtype=np.uint64)
        got = pb.Request.FromString(req.encode(rid, actions=acts, reset=reset,
                                               reset_seeds=seeds))
        want = pb.Request(id=rid, step_batch=pb.StepBatch(arrays=pb.BatchArrays(
            world_ids=ids, tokens=tokens, steps=3, actions=acts.ravel().tolist(),
            reset=reset.tolist(), reset_seeds=[int(s) for s in seeds])))
        assert got == want
        got = pb.Request.FromString(req.encode(rid, commands=acts))
        assert list(got.step_batch.arrays.commands) == acts.ravel().tolist()


def test_varints_round_trip():
    values = np.array([0, 1, 127, 128, 255, 16383, 16384, 2 ** 21 - 1, 2 ** 21, 2 ** 35,
                       2 ** 63, 2 ** 64 - 1], dtype=np.uint64)
    data = _wire.varints(values)
    assert list(pb.BatchArrays.FromString(
        _wire._len_field(_wire._A_SEEDS, data)).reset_seeds) == [int(v) for v in values]
    np.testing.assert_array_equal(_wire.read_varints(data), values)
    # each of the reader's ways: one byte each, one width each, mixed widths, few values
    rng = np.random.default_rng(4)
    for v in (rng.integers(0, 128, 500), rng.integers(2 ** 14, 2 ** 21, 500),
              rng.integers(0, 2 ** 63, 500), np.full(300, 2 ** 64 - 1, dtype=np.uint64),
              rng.integers(0, 300, 5)):
        v = v.astype(np.uint64)
        for n in (len(v), None):
            np.testing.assert_array_equal(_wire.read_varints(_wire.varints(v), n), v)


def test_read_arrays_reply_against_protobuf():
    """Random BatchArraysReply messages serialized by protobuf, read by the wire reader: the
    same values; replies with errors or an Error result left to the generated classes."""
    rng = np.random.default_rng(3)
    for n, ns, no, ni in [(1, 2, 6, 0), (5, 4, 3, 2), (300, 7, 11, 1)]:
        r = pb.BatchArraysReply(
            codes=[0] * n, state_size=ns, sensor_size=1, observation_size=no, info_size=ni,
            time=rng.normal(size=n).tolist(), step_count=rng.integers(0, 2 ** 40, n).tolist(),
            events=rng.integers(0, 300, n).tolist(), state=rng.normal(size=n * ns).tolist(),
            sensors=rng.normal(size=n).tolist(), observation=rng.normal(size=n * no).tolist(),
            reward=rng.normal(size=n).tolist(), terminated=(rng.random(n) < .5).tolist(),
            truncated=(rng.random(n) < .5).tolist(), info_keys=["k%d" % i for i in range(ni)],
            info=rng.normal(size=n * ni).tolist(), digests=rng.bytes(32 * n))
        data = pb.Response(id=2 ** 33 + n, step_batch=pb.StepBatchReply(arrays=r)).SerializeToString()
        assert _wire.response_id(data) == 2 ** 33 + n
        got = _wire.read_arrays_reply(data, n)
        want = robosim.client.step_arrays_dict(r, n)
        _columns_equal(got, want, n)
        r.codes[0] = pb.NOT_FOUND
        r.errors.add(index=0, world_id=5, error=pb.Error(code=pb.NOT_FOUND, message="gone"))
        bad = pb.Response(id=1, step_batch=pb.StepBatchReply(arrays=r)).SerializeToString()
        assert _wire.read_arrays_reply(bad, n) is None
    err = pb.Response(id=1, error=pb.Error(code=pb.INVALID_ARGUMENT, message="no"))
    assert _wire.read_arrays_reply(err.SerializeToString(), 1) is None


def test_wire_fields_checked_against_descriptors():
    """The wire code's field check refuses a field of another type or repetition."""
    fd = pb.Request.DESCRIPTOR.fields_by_name["id"]
    assert _wire.field(pb.Step, "action", fd.TYPE_DOUBLE, repeated=True).number == 4
    with pytest.raises(RuntimeError, match="robosim.v1.Step.action"):
        _wire.field(pb.Step, "action", fd.TYPE_FLOAT, repeated=True)
    with pytest.raises(RuntimeError, match="robosim.v1.Step.steps"):
        _wire.field(pb.Step, "steps", fd.TYPE_UINT32, repeated=True)
    with pytest.raises(RuntimeError, match="no field"):
        _wire.field(pb.Step, "nonesuch", fd.TYPE_UINT32)


def test_unclosed_objects_released_when_collected(endpoint):
    """weakref.finalize releases what a Client, an Observer and a LocalServer hold when they
    are collected without close(): the sockets closed, the server process stopped."""
    c = robosim.Client(endpoint)
    sock = c._sock
    del c
    gc.collect()
    assert sock.closed
    obs = robosim.Observer(endpoint, world_id=None)
    sock = obs._sock
    del obs
    gc.collect()
    assert sock.closed
    server = robosim.LocalServer()
    proc = server.proc
    del server
    gc.collect()
    assert proc.wait(10) is not None


def test_error_codes_are_the_protocols():
    from robosim.errors import ERROR_CODES
    assert ERROR_CODES == {v.number: v.name for v in pb.ErrorCode.DESCRIPTOR.values}
    assert robosim.RobosimError(pb.DEADLINE_EXCEEDED, "x").code_name == "DEADLINE_EXCEEDED"
