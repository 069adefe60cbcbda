"""robosim verify: a recording of a run replays on this build with every digest reproduced; the
same recording with one bit flipped in one frame fails, naming that frame's control step."""
import struct

import robosim
from robosim import record as rec
from robosim import verify as ver
from robosim.cli import main as cli_main


def _record_run(path, steps=40):
    with robosim.LocalServer(args=["--stream-max-hz", "1000000"]) as srv, \
            robosim.Client(srv.endpoint) as c:
        wid = c.create_world("finger", params={"finger.object_x0": 0.3}, seed=9)
        for k in range(steps):  # a new force each step: the finger reaches the object
            c.step(wid, steps=1 + (k % 3), commands={"finger": [0.5 + 0.05 * k]})
        n, dropped, missed = rec.record(srv.endpoint, path, world_id=wid, max_frames=steps,
                                        idle=5.0)
        assert (n, missed) == (steps, 0)


def _rewrite(src, dst, change):
    """dst: src's frames and world descriptions, `change(index, frame)` applied to each frame."""
    frames = rec.read(src)
    with rec.Recorder(dst) as out:
        for info in rec.read_worlds(src):
            out.add_world(info)
        for i, (_, _, frame, _) in enumerate(frames):
            change(i, frame)
            out.write(frame, frame.SerializeToString())
    return frames


def test_verify_matching_and_flipped_bit(tmp_path, capsys):
    good = str(tmp_path / "run.mcap")
    _record_run(good)
    lines = []
    assert ver.verify(good, out=lines.append) == 0, lines
    assert lines[0].startswith("ok: ") and "every digest reproduced" in lines[0]
    assert cli_main(["verify", good]) == 0

    # one bit of frame 17's finger state (x_o, its third value): verify names that step
    bad = str(tmp_path / "flipped.mcap")

    def flip_state(i, frame):
        if i == 17:
            v = frame.state.entities[0].state
            bits = struct.unpack("<Q", struct.pack("<d", v[2]))[0] ^ 1
            v[2] = struct.unpack("<d", struct.pack("<Q", bits))[0]
    frames = _rewrite(good, bad, flip_state)
    step = frames[17][2].state.step_count
    lines = []
    assert ver.verify(bad, out=lines.append) == 1
    assert lines[0].startswith("FAILED: ") and "control step" in lines[0], lines
    assert ("%d" % step) in lines[0] and "finger.x_o" in lines[0], lines

    # one bit of frame 30's digest
    bad2 = str(tmp_path / "flipped_digest.mcap")

    def flip_digest(i, frame):
        if i == 30:
            d = bytearray(frame.state.digest)
            d[0] ^= 0x80
            frame.state.digest = bytes(d)
    frames = _rewrite(good, bad2, flip_digest)
    lines = []
    assert ver.verify(bad2, out=lines.append) == 1
    assert "seq %d" % frames[30][1] in lines[0] and "digest only" in lines[0], lines
