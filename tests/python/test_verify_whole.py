"""robosim verify checks that a recording is whole and says what differs in full: a recording
cut short at a frame boundary, or with a frame dropped or two frames swapped inside a well-formed
file, fails (each world's end record: frame count, last digest, chain over its messages); a
recording with no end record is not passed; a digest-only difference shows both digests in
full; a Gymnasium episode recorded with robosim.record.record_episodes (its actions on the input
channel) verifies, and fails when one action is changed; and 1,000 random single-bit flips of a
recording: every flip that changes a frame's bytes fails, and no flip gives a traceback or more
than one line of reason."""
import random

import numpy as np
import pytest

import robosim
from robosim import record as rec
from robosim import recording as R
from robosim import verify as ver
from robosim.cli import main as cli_main

pytest.importorskip("mcap")


def _record_run(path, steps):
    with robosim.LocalServer(args=["--stream-max-hz", "1000000"]) as srv, \
            robosim.Client(srv.endpoint) as c:
        wid = c.create_world("finger", params={"finger.object_x0": 0.3}, seed=9)
        for k in range(steps):  # a new force each step: the finger reaches the object
            c.step(wid, steps=1 + (k % 3), commands={"finger": [0.5 + 0.05 * k]})
        n, dropped, missed = rec.record(srv.endpoint, path, world_id=wid, max_frames=steps,
                                        idle=5.0)
        assert (n, missed) == (steps, 0)


@pytest.fixture(scope="module")
def run150(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("whole") / "run150.mcap")
    _record_run(path, 150)
    return path


def _copy(src, dst, pick, keep_end=True, checksums=True):
    """dst: an MCAP written record by record from src's schemas, channels, the messages
    pick(list of (channel topic, message)) returns, and src's metadata as it was (the world
    description; its end records unless keep_end is False): what a tool that cuts or edits a
    recording at message boundaries writes. checksums=False: no CRCs and no compression, as
    a writer may make them (the reader then cannot refuse a changed byte; verify must)."""
    from mcap.reader import make_reader
    from mcap.writer import Writer
    with open(src, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        msgs = [(ch.topic, ch, m) for _, ch, m in reader.iter_messages(log_time_order=False)]
        metas = list(reader.iter_metadata())
    with open(dst, "wb") as out:
        from mcap.writer import CompressionType
        w = Writer(out, enable_crcs=checksums, enable_data_crcs=checksums,
                   **({} if checksums else {"compression": CompressionType.NONE}))
        w.start(profile="robosim", library="test")
        sids = {sid: w.register_schema(s.name, s.encoding, s.data)
                for sid, s in summary.schemas.items()}
        cids = {cid: w.register_channel(ch.topic, ch.message_encoding, sids[ch.schema_id])
                for cid, ch in summary.channels.items()}
        for _, ch, m in pick(msgs):
            w.add_message(cids[ch.id], m.log_time, m.data, m.publish_time, m.sequence)
        for md in metas:
            if keep_end or md.name != R.END_RECORD:
                w.add_metadata(md.name, md.metadata)
        w.finish()


def _verify(path, endpoint=None):
    lines = []
    rc = ver.verify(path, endpoint=endpoint, out=lines.append)
    return rc, lines


def test_whole_recording_verifies_and_a_cut_one_fails(run150, tmp_path, endpoint):
    rc, lines = _verify(run150, endpoint)
    assert rc == 0 and lines[0].startswith("ok: world ") and "150 frames" in lines[0], lines
    assert len(R.load(run150).ends) == 1

    cut = str(tmp_path / "cut.mcap")  # the first 32 frames, the rest of the file as it was
    _copy(run150, cut, lambda m: m[:32])
    assert len(R.load(cut).frames) == 32
    rc, lines = _verify(cut, endpoint)
    assert rc == 1 and "32 frames, its end record says 150" in lines[0], lines
    assert cli_main(["verify", cut, "--endpoint", endpoint]) == 1

    bare = str(tmp_path / "bare.mcap")  # cut, and its end record left out too
    _copy(run150, bare, lambda m: m[:32], keep_end=False)
    rc, lines = _verify(bare, endpoint)
    assert rc == 1 and "no end record" in lines[0], lines


def test_dropped_or_reordered_frames_fail(run150, tmp_path, endpoint):
    dropped = str(tmp_path / "dropped.mcap")
    _copy(run150, dropped, lambda m: m[:70] + m[71:])
    rc, lines = _verify(dropped, endpoint)
    assert rc == 1 and "149 frames, its end record says 150" in lines[0], lines

    swapped = str(tmp_path / "swapped.mcap")
    _copy(run150, swapped, lambda m: m[:40] + [m[41], m[40]] + m[42:])
    rc, lines = _verify(swapped, endpoint)
    assert rc == 1 and "reordered" in lines[0], lines

    # the same frame twice in place of the last one: the count holds, the chain does not
    doubled = str(tmp_path / "doubled.mcap")
    _copy(run150, doubled, lambda m: m[:149] + [m[148]])
    rc, lines = _verify(doubled, endpoint)
    assert rc == 1 and "FAILED" in lines[0], lines


def test_digest_only_difference_shows_both_digests_in_full(run150, tmp_path, endpoint):
    frames = rec.read(run150)
    bad = str(tmp_path / "digest.mcap")
    with rec.Recorder(bad) as out:
        for info in rec.read_worlds(run150):
            out.add_world(info)
        for i, (_, _, frame, _) in enumerate(frames):
            if i == 30:
                d = bytearray(frame.state.digest)
                d[-1] ^= 0x01  # the last byte: a shortened digest would hide it
                frame.state.digest = bytes(d)
            out.write(frame, frame.SerializeToString())
    rc, lines = _verify(bad, endpoint)
    want = frames[30][2].state.digest.hex()
    assert rc == 1 and "digest only" in lines[0], lines
    assert want in lines[0], lines  # the replayed digest: the one the server computes
    recorded = bytearray(frames[30][2].state.digest)
    recorded[-1] ^= 0x01
    assert bytes(recorded).hex() in lines[0], lines


def test_gymnasium_episodes_verify(endpoint, tmp_path):
    gym = pytest.importorskip("gymnasium")
    import robosim.envs  # noqa: F401  (registers robosim/<Task>)
    path = str(tmp_path / "episodes.mcap")
    env = rec.record_episodes(gym.make("robosim/FingerPush-v0", endpoint=endpoint), path)
    env.action_space.seed(5)
    for ep in range(2):
        env.reset(seed=100 + ep)
        for _ in range(25):
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            if term or trunc:
                break
    env.close()
    r = R.load(path)
    wid = r.frames[0][0]
    assert len(r.inputs[wid]) == len(r.frames)  # a reset or a step before every frame
    rc, lines = _verify(path, endpoint)
    assert rc == 0 and lines[0].startswith("ok: "), lines

    # one action changed by one ulp: a forged recording (its end record rewritten to match)
    # still fails, at that step
    from robosim._proto import pb
    forged = str(tmp_path / "forged.mcap")
    inputs = {seq: raw for seq, raw in r.inputs[wid]}
    target = sorted(inputs)[7]
    with rec.Recorder(forged) as out:
        for info in rec.read_worlds(path):
            out.add_world(info)
        for _, seq, frame, raw in r.decoded():
            if seq in inputs:
                req = pb.Request.FromString(inputs[seq])
                if seq == target:
                    assert req.WhichOneof("op") == "step"
                    req.step.action[0] = float(np.nextafter(req.step.action[0], np.inf))
                out.write_input(wid, seq, req)
            out.write(frame, raw)
    rc, lines = _verify(forged, endpoint)
    assert rc == 1 and "frame seq %d" % target in lines[0], lines


def test_recorded_client_verifies(endpoint, tmp_path):
    """robosim.record.record_client: what the observer stream cannot show (commands changed
    between frames, a wrench, a schedule, several steps in one request, a reset) is on the
    input channel; the run verifies, and a forged recording (one force changed, its end record
    rewritten to match) fails at that frame."""
    from robosim._proto import pb
    path = str(tmp_path / "client.mcap")
    with robosim.Client(endpoint) as c:
        with rec.record_client(c, path):
            wid = c.create_world("finger", params={"finger.object_x0": 0.05}, seed=4)
            c.set_force(wid, "finger", [2.0])
            c.step(wid, steps=7)
            c.set_force(wid, "finger", [1.1])
            c.step(wid, steps=3, parts=["state"])
            c.set_schedule(wid, "finger", 0, [0.0, 0.05, 0.1], [0.5, -0.5, 0.3])
            c.step(wid, steps=12)
            c.reset(wid, seed=8)
            c.step(wid, steps=2, commands={"finger": [3.0]})
            c.step(wid, steps=1, commands={"finger": [-1.0]})
            c.destroy_world(wid)
        assert "_call" not in c.__dict__  # the client is left as it was
    r = R.load(path)
    wid = r.frames[0][0]
    ops = [pb.Request.FromString(raw).WhichOneof("op") for _, raw in r.inputs[wid]]
    assert ops == ["set_force", "step", "set_force", "step", "set_schedule", "step", "reset",
                   "step", "step"], ops
    rc, lines = _verify(path, endpoint)
    assert rc == 0 and lines[0].startswith("ok: ") and "6 frames" in lines[0], lines

    forged = str(tmp_path / "forged_client.mcap")
    with rec.Recorder(forged) as out:
        for info in rec.read_worlds(path):
            out.add_world(info)
        pending = list(r.inputs[wid])
        for _, seq, frame, raw in r.decoded():
            for s, inp in [p for p in pending if p[0] == seq]:
                req = pb.Request.FromString(inp)
                if req.WhichOneof("op") == "set_force" and req.set_force.values[0] == 1.1:
                    req.set_force.values[0] = 1.1000000000000003
                out.write_input(wid, s, req)
            out.write(frame, raw)
    rc, lines = _verify(forged, endpoint)
    assert rc == 1 and "frame seq 2" in lines[0], lines

    # an input asking far more steps than its frame shows is refused before it is sent
    greedy = str(tmp_path / "greedy.mcap")
    with rec.Recorder(greedy) as out:
        for info in rec.read_worlds(path):
            out.add_world(info)
        for _, seq, frame, raw in r.decoded():
            for s, inp in [p for p in r.inputs[wid] if p[0] == seq]:
                req = pb.Request.FromString(inp)
                if seq == 3 and req.WhichOneof("op") == "step":
                    req.step.steps = 10 ** 9
                out.write_input(wid, s, req)
            out.write(frame, raw)
    rc, lines = _verify(greedy, endpoint)
    assert rc == 1 and "frame seq 3" in lines[0] and "1000000000 control steps" in lines[0], \
        lines


def _flip(data, bit):
    b = bytearray(data)
    b[bit // 8] ^= 1 << (bit % 8)
    return bytes(b)


@pytest.mark.parametrize("checksums", [True, False], ids=["crc", "no-crc"])
def test_thousand_bit_flips(tmp_path, endpoint, capsys, checksums):
    """1,000 random single-bit flips of a recording (frames, inputs, descriptions, end
    records, the MCAP structure): a flip that changes any frame's bytes fails (exit status 1 or
    2), every flip passes or fails with one line of reason, never a traceback. The recording
    as robosim writes it (every CRC: the reader refuses the flips), and the same written
    without checksums or compression (the flips reach verify's end-record and replay checks)."""
    gym = pytest.importorskip("gymnasium")
    import robosim.envs  # noqa: F401
    path = str(tmp_path / "small.mcap")
    env = rec.record_episodes(gym.make("robosim/FingerPush-v0", endpoint=endpoint), path)
    env.action_space.seed(3)
    env.reset(seed=3)
    for _ in range(12):
        env.step(env.action_space.sample())
    env.close()
    if not checksums:
        bare = str(tmp_path / "nocrc.mcap")
        _copy(path, bare, lambda m: m, checksums=False)
        path = bare
    original = open(path, "rb").read()
    frames0 = [raw for _, _, _, raw in R.loads(original).frames]
    flipped = str(tmp_path / "flipped.mcap")
    rng = random.Random(20261129)
    counts = {}
    for _ in range(1000):
        bit = rng.randrange(8 * len(original))
        data = _flip(original, bit)
        with open(flipped, "wb") as f:
            f.write(data)
        try:
            frames = [raw for _, _, _, raw in R.loads(data).frames]
        except R.RecordingError:
            frames = None
        capsys.readouterr()
        rc = cli_main(["verify", flipped, "--endpoint", endpoint])
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err, (bit, out, err)
        counts[rc] = counts.get(rc, 0) + 1
        if frames != frames0:  # the flip changed a frame's bytes (or the file is refused)
            assert rc in (1, 2), (bit, rc, out, err)
        assert rc in (0, 1, 2), (bit, rc, out, err)
        if rc:
            reason = [ln for ln in (out + err).splitlines()
                      if ln.startswith("robosim verify:")]
            assert len(reason) == 1 and len(err.splitlines()) <= 1, (bit, out, err)
    print("\n1000 single-bit flips (%s): exit statuses %s"
          % ("checksums" if checksums else "no checksums", dict(sorted(counts.items()))))
    assert sum(counts.values()) == 1000
