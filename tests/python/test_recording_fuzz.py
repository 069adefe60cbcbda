"""Fuzzing the recording reader behind robosim verify and robosim fit (robosim.recording) with
Hypothesis, two ways:

- mutation: a recording robosim record writes (every checksum on), with bytes replaced,
  deleted, inserted, cut off or added: any change is refused with RecordingError, no change
  reads back the same frames;
- structure: MCAP files built from random records (schemas, channels, frames valid or not,
  metadata with world descriptions valid, wrong or not JSON, chunks compressed or not with
  declared sizes and checksums right or wrong, unknown records, summaries, footers): the
  reader returns a Recording whose every part holds what verify and fit rely on, or raises
  RecordingError; never anything else, within small limits.

Both derandomized with a fixed number of examples in the suite; a long run draws new ones:

    ROBOSIM_FUZZ_EXAMPLES=200000 .venv/bin/python -m pytest -q tests/python/test_recording_fuzz.py
"""
import json
import os
import struct
import zlib

import pytest

from robosim import fit, recording, verify
from robosim._proto import pb
from robosim.recording import Limits, RecordingError

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("mcap")
zstandard = pytest.importorskip("zstandard")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

LONG = os.environ.get("ROBOSIM_FUZZ_EXAMPLES")
FUZZ = settings(max_examples=int(LONG) if LONG else 150, derandomize=not LONG, deadline=None,
                database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SMALL = Limits(file_bytes=1 << 20, record_bytes=64 << 10, chunk_bytes=64 << 10,
               total_bytes=256 << 10, frames=50, worlds=5, json_bytes=4 << 10, json_depth=8)

WORLD = {"type": "world", "id": 1, "preset": "finger", "task": None,
         "entities": {"finger": {"kind": "finger", "state": ["x_f", "v_f"], "sensors": [],
                                 "actuators": ["force"], "params": {"mass": [1.0]}}},
         "workspaces": {}}


def _frame(seq, step, world=1, state=(0.0, 1.0), commands=(0.5,)):
    f = pb.StreamFrame(world_id=world, seq=seq, wall_time=1e9 + seq)
    f.state.world_id = world
    f.state.step_count = step
    e = f.state.entities.add()
    e.name = "finger"
    e.state.extend(state)
    e.commands.extend(commands)
    return f


def _valid_recording(tmp):
    from robosim.record import Recorder
    path = os.path.join(tmp, "seed.mcap")
    with Recorder(path, {"endpoint": "none"}) as out:
        out.add_world(WORLD)
        for k in range(1, 31):
            f = _frame(k, k, state=(0.01 * k, 0.1), commands=(0.5 + k,))
            out.write(f, f.SerializeToString())
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    data = _valid_recording(str(tmp_path_factory.mktemp("fuzz")))
    rec = recording.loads(data, SMALL)
    assert len(rec.frames) == 30 and rec.worlds == {1: WORLD}
    return data, rec


def _check(rec):
    """What verify and fit rely on in a Recording the reader returned."""
    assert len(rec.frames) <= SMALL.frames and len(rec.worlds) <= SMALL.worlds
    for wid, seq, step, raw in rec.frames:
        f = pb.StreamFrame.FromString(raw)
        assert (f.world_id, f.seq, f.state.step_count) == (wid, seq, step)
    for wid, info in rec.worlds.items():
        assert recording.check_world(info)["id"] == wid
    for call in (lambda: verify.plan(rec, max_step_gap=1000, max_steps=10_000),
                 lambda: fit.from_recording(rec, max_steps=40)):
        try:
            call()
        except RecordingError:
            pass


def _edit(data, kind, at, blob):
    at = at % (len(data) + 1)
    if kind == "replace" and data:
        at = min(at, len(data) - 1)
        return data[:at] + bytes([data[at] ^ (blob[0] if blob and blob[0] else 0x01)]) + \
            data[at + 1:]
    if kind == "delete":
        return data[:at] + data[at + 1 + len(blob):]
    if kind == "insert":
        return data[:at] + (blob or b"\0") + data[at:]
    if kind == "truncate":
        return data[:at]
    return data + (blob or b"\0")  # append


EDITS = st.lists(st.tuples(st.sampled_from(["replace", "delete", "insert", "truncate", "append"]),
                           st.integers(0, 1 << 20), st.binary(max_size=16)),
                 min_size=1, max_size=4)


@FUZZ
@given(edits=EDITS)
def test_any_changed_byte_is_refused(seed, edits):
    data, want = seed
    changed = data
    for kind, at, blob in edits:
        changed = _edit(changed, kind, at, blob)
    try:
        rec = recording.loads(changed, SMALL)
    except RecordingError as exc:
        assert "\n" not in str(exc) and str(exc)
        assert changed != data, exc
        return
    assert changed == data, "a changed recording was read"
    assert rec.frames == want.frames and rec.worlds == want.worlds


# ---- structure-aware: MCAP files from random records ----

def _rec(op, body):
    return bytes([op]) + struct.pack("<Q", len(body)) + body


def _s(text):
    b = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return struct.pack("<I", len(b)) + b


def _map(d):
    body = b"".join(_s(k) + _s(v) for k, v in d.items())
    return struct.pack("<I", len(body)) + body


NAMES = st.sampled_from(["finger", "arm", "", "x" * 300])
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
U64 = st.one_of(st.integers(0, 50), st.sampled_from([0, 1, 2, 999_999, 1 << 32, 1 << 63,
                                                      (1 << 64) - 1]))


@st.composite
def frames(draw):
    f = _frame(draw(U64), draw(U64), world=draw(st.sampled_from([1, 1, 1, 2, 0, 1 << 63])),
               state=draw(st.lists(FLOATS, max_size=4)),
               commands=draw(st.lists(FLOATS, max_size=2)))
    if not draw(st.integers(0, 5)):
        f.state.world_id = draw(U64)
    f.state.entities[0].name = draw(NAMES)
    raw = f.SerializeToString()
    how = draw(st.sampled_from(["valid", "valid", "valid", "valid", "random", "cut"]))
    if how == "random":
        return draw(st.binary(max_size=64))
    if how == "cut":
        return raw[:draw(st.integers(0, len(raw)))]
    return raw


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20)


@st.composite
def world_json(draw):
    how = draw(st.sampled_from(["valid", "valid", "valid", "changed", "any", "text", "deep"]))
    if how == "valid":
        w = json.loads(json.dumps(WORLD))
        w["id"] = draw(U64)
        return json.dumps(w)
    if how == "changed":
        w = json.loads(json.dumps(WORLD))
        path = draw(st.sampled_from([("id",), ("preset",), ("entities",),
                                     ("entities", "finger"), ("entities", "finger", "state"),
                                     ("entities", "finger", "params"),
                                     ("entities", "finger", "params", "mass")]))
        node = w
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = draw(JSON_VALUES)
        return json.dumps(w)
    if how == "any":
        return json.dumps(draw(JSON_VALUES))
    if how == "deep":
        n = draw(st.integers(1, 5000))
        return "[" * n + "]" * n
    return draw(st.text(max_size=40))


CHANNEL_TOPICS = st.sampled_from(["/world/1", "/world/2", "/world/0", "/other", "/world/x",
                                  "/world/18446744073709551616"])


@st.composite
def inner_record(draw):
    """A record a chunk may hold (and the data section too)."""
    kind = draw(st.sampled_from(["schema", "channel", "message", "message", "message",
                                 "junk"]))
    if kind == "schema":
        return _rec(0x03, struct.pack("<H", draw(st.sampled_from([0, 1, 2])))
                    + _s(draw(st.sampled_from(["robosim.v1.StreamFrame", "other"])))
                    + _s(draw(st.sampled_from(["protobuf", "json"]))) + _s(b"descriptor"))
    if kind == "channel":
        return _rec(0x04, struct.pack("<HH", draw(st.sampled_from([0, 1, 2])),
                                      draw(st.sampled_from([0, 1, 2])))
                    + _s(draw(CHANNEL_TOPICS)) + _s(draw(st.sampled_from(["protobuf", "cdr"])))
                    + _map({}))
    if kind == "message":
        return _rec(0x05, struct.pack("<HIQQ", draw(st.sampled_from([1, 1, 1, 2, 0])), 0, 0, 0)
                    + draw(frames()))
    return _rec(draw(st.integers(0, 255)), draw(st.binary(max_size=24)))


@st.composite
def chunk(draw):
    body = b"".join(draw(st.lists(inner_record(), max_size=8)))
    compression = draw(st.sampled_from(["", "zstd", "lz4", "zstd", "", "zstd", "gzip"]))
    data = body
    if compression == "zstd":
        data = zstandard.ZstdCompressor().compress(body)
    elif compression == "lz4":
        import lz4.frame
        data = lz4.frame.compress(body)
    if draw(st.integers(0, 19)) == 0:  # a bomb: more than the limit, declared or not
        data = zstandard.ZstdCompressor().compress(bytes(SMALL.chunk_bytes + 100))
    size = len(body) if draw(st.integers(0, 3)) else draw(st.sampled_from(
        [len(body) + 1, max(0, len(body) - 1), 0, SMALL.chunk_bytes + 1, (1 << 64) - 1]))
    crc = draw(st.sampled_from([zlib.crc32(body)] * 4 + [0, 12345]))
    return _rec(0x06, struct.pack("<QQQI", 0, 0, size, crc) + _s(compression)
                + struct.pack("<Q", len(data)) + data)


PRELUDE = (_rec(0x03, struct.pack("<H", 1) + _s("robosim.v1.StreamFrame") + _s("protobuf")
                + _s(b""))
           + _rec(0x04, struct.pack("<HH", 1, 1) + _s("/world/1") + _s("protobuf") + _map({}))
           + _rec(0x04, struct.pack("<HH", 2, 1) + _s("/world/2") + _s("protobuf") + _map({})))


@st.composite
def data_record(draw):
    kind = draw(st.sampled_from(["inner", "inner", "chunk", "chunk", "metadata", "junk"]))
    if kind == "inner":
        return draw(inner_record())
    if kind == "chunk":
        return draw(chunk())
    if kind == "metadata":
        name = draw(st.sampled_from(["robosim.world", "robosim.world", "robosim", "other"]))
        meta = {"id": "1", "json": draw(world_json())}
        if draw(st.integers(0, 19)) == 0:
            del meta["json"]
        return _rec(0x0C, _s(name) + _map(meta))
    return _rec(draw(st.sampled_from([0x00, 0x01, 0x02, 0x07, 0x08, 0x0F, 0x80])),
                draw(st.binary(max_size=24)))


@st.composite
def mcap_files(draw):
    data = recording.MAGIC + _rec(0x01, _s("robosim") + _s("fuzz"))
    if draw(st.integers(0, 4)):  # mostly: the schema and two worlds' channels first
        data += PRELUDE
    data += b"".join(draw(st.lists(data_record(), max_size=10)))
    crc = zlib.crc32(data) if draw(st.integers(0, 3)) else draw(st.sampled_from([0, 7]))
    data += _rec(0x0F, struct.pack("<I", crc))
    summary_start = len(data)
    summary = b"".join(draw(st.lists(inner_record(), max_size=3)))
    data += summary
    head = struct.pack("<BQQQ", 0x02, 20, summary_start if summary else 0, 0)
    scrc = zlib.crc32(head, zlib.crc32(summary)) if draw(st.integers(0, 3)) else \
        draw(st.sampled_from([0, 7]))
    data += head + struct.pack("<I", scrc) + recording.MAGIC
    cut = None if draw(st.integers(0, 5)) else draw(st.sampled_from([0, 1, 9, 20, 100]))
    return data if cut is None else data[:max(0, len(data) - cut)]


@FUZZ
@given(data=mcap_files())
def test_built_files_read_or_are_refused(data):
    try:
        rec = recording.loads(data, SMALL)
    except RecordingError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    _check(rec)


@st.composite
def written_files(draw):
    """Files robosim record's writer makes, of frames with random worlds, seqs, step counts and
    values, and world descriptions valid or not: the reader reads each (its container is
    sound), verify's plan and fit's recording accept or refuse it with RecordingError."""
    import io

    from mcap.writer import Writer
    from mcap_protobuf.schema import register_schema
    out = io.BytesIO()
    w = Writer(out, enable_crcs=True, enable_data_crcs=True,
               chunk_size=draw(st.sampled_from([64, 1024, 1 << 20])))
    w.start(profile="robosim", library="fuzz")
    schema = register_schema(w, pb.StreamFrame)
    channels = {}
    for _ in range(draw(st.integers(0, 2))):
        w.add_metadata("robosim.world", {"id": "1", "json": draw(world_json())})
    steps = draw(st.lists(U64, max_size=40))
    if draw(st.booleans()):
        steps = sorted(steps)
    for i, step in enumerate(steps):
        world = draw(st.sampled_from([1, 1, 1, 2]))
        f = _frame(draw(st.sampled_from([i + 1, i + 1, 0, 1 << 63])), step, world=world,
                   state=draw(st.lists(FLOATS, min_size=2, max_size=2)),
                   commands=draw(st.lists(FLOATS, min_size=1, max_size=1)))
        if world not in channels:
            channels[world] = w.register_channel(topic="/world/%d" % world,
                                                 message_encoding="protobuf", schema_id=schema)
        w.add_message(channel_id=channels[world], log_time=i, publish_time=i, sequence=i,
                      data=f.SerializeToString())
    w.finish()
    return out.getvalue()


@FUZZ
@given(data=written_files())
def test_written_files_plan_or_are_refused(data):
    try:
        rec = recording.loads(data, SMALL)
    except RecordingError as exc:
        assert "description" in str(exc), exc  # the only thing that may be wrong
        return
    try:
        by_world = verify.plan(rec, max_step_gap=1000, max_steps=10_000)
    except RecordingError:
        pass
    else:
        total = 0
        for frames in by_world.values():
            done = 0
            for _, step, _ in frames:
                done = 0 if step < done or (step == 0 and done) else done
                assert step - done <= 1000
                total += step - done
                done = step
        assert total <= 10_000
    try:
        r = fit.from_recording(rec, max_steps=40)
    except RecordingError:
        pass
    else:
        assert list(r["step_count"]) == list(range(1, len(r["states"]) + 1))
        assert r["states"].shape[0] == r["commands"].shape[0] <= 40
