"""robosim verify and robosim fit on hostile files: truncations, changed bytes, files that are
not recordings (JSON, /dev/zero, a directory, a FIFO), a garbage world description, a frame at
step 2^63, zstd and lz4 bombs, frames 999,999 steps apart. Each command runs as its own process
under a 1 GiB address-space limit and must end with exit status 2 and exactly one line on
stderr, "robosim CMD: FILE: REASON", no traceback, well within a time limit taken from the
same run's baseline (the command refusing a directory, which is the interpreter starting)."""
import json
import os
import resource
import struct
import subprocess
import sys
import time

import pytest

import robosim
from robosim import record as rec
from robosim import recording

pytest.importorskip("mcap")
zstandard = pytest.importorskip("zstandard")

AS_LIMIT = 1 << 30          # address space of each command, bytes
HARD_TIMEOUT = 60.0         # a command still running then has failed
BOMB_BYTES = 1 << 30        # what a bomb's chunk decompresses to
FIT = ["--preset", "finger", "--param", "finger.restitution=0.3,0,1"]
TRUNCATIONS = 7
FLIPS = 12


def _record(path, steps=40):
    """A recording of a finger world, a frame at every control step from its first (what fit
    needs too; verify replays it)."""
    with robosim.LocalServer(args=["--stream-max-hz", "1000000"]) as srv, \
            robosim.Client(srv.endpoint) as c:
        wid = c.create_world("finger", params={"finger.object_x0": 0.3}, seed=9)
        for k in range(steps):
            c.step(wid, steps=1, commands={"finger": [0.5 + 0.05 * k]})
        n, _, missed = rec.record(srv.endpoint, path, world_id=wid, max_frames=steps, idle=5.0)
        assert (n, missed) == (steps, 0)


def _rewrite(src, dst, change=None, world_json=None, raw_of=None):
    """dst: src's frames (each through change(i, frame)) and world descriptions (or the texts
    `world_json` as robosim.world metadata); raw_of(i, frame): the bytes written instead."""
    frames = rec.read(src)
    with rec.Recorder(dst) as out:
        if world_json is None:
            for info in rec.read_worlds(src):
                out.add_world(info)
        else:
            for text in world_json:
                out._writer.add_metadata("robosim.world", {"id": "1", "json": text})
        for i, (_, _, frame, _) in enumerate(frames):
            if change:
                change(i, frame)
            raw = raw_of(i, frame) if raw_of else frame.SerializeToString()
            out.write(frame, raw)


def _mcap_record(op, body):
    return bytes([op]) + struct.pack("<Q", len(body)) + body


def _mcap_str(text):
    b = text.encode()
    return struct.pack("<I", len(b)) + b


def _bomb_file(path, compression, data, declared):
    """An MCAP file whose one chunk holds `data` compressed with `compression` and declares
    `declared` bytes decompressed; the rest of the file well formed."""
    header = _mcap_record(0x01, _mcap_str("robosim") + _mcap_str("bomb"))
    chunk = _mcap_record(0x06, struct.pack("<QQQI", 0, 0, declared, 0) + _mcap_str(compression)
                         + struct.pack("<Q", len(data)) + data)
    data_end = _mcap_record(0x0F, struct.pack("<I", 0))
    footer = _mcap_record(0x02, struct.pack("<QQI", 0, 0, 0))
    with open(path, "wb") as f:
        f.write(recording.MAGIC + header + chunk + data_end + footer + recording.MAGIC)


def _zeros_compressed(compressor, flush):
    """BOMB_BYTES zeros through a streaming compressor, 1 MiB at a time."""
    block = bytes(1 << 20)
    parts = [compressor(block) for _ in range(BOMB_BYTES >> 20)]
    return b"".join(parts) + flush()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    good = str(d / "good.mcap")
    _record(good)
    data = open(good, "rb").read()
    out = {"good": good}
    # truncations: empty, one byte, the magic alone, inside the header, half, inside the footer,
    # all but the last byte
    for i, n in enumerate((0, 1, 8, 30, len(data) // 2, len(data) - 12, len(data) - 1)):
        out["truncated-%d" % i] = p = str(d / ("truncated-%d.mcap" % n))
        open(p, "wb").write(data[:n])
    # one byte changed at twelve places spread over the file (magic, header, chunk, metadata,
    # summary, footer)
    for i in range(FLIPS):
        at = 3 + i * (len(data) - 4) // (FLIPS - 1)
        at = min(at, len(data) - 1)
        b = bytearray(data)
        b[at] ^= 0x5A
        out["flip-%d" % i] = p = str(d / ("flip-%d.mcap" % at))
        open(p, "wb").write(bytes(b))
    out["json"] = p = str(d / "run.json")
    open(p, "w").write(json.dumps({"states": [[0, 0]], "commands": [[0]]}))
    out["dev-zero"] = "/dev/zero"
    out["directory"] = str(d)
    out["fifo"] = p = str(d / "fifo.mcap")
    os.mkfifo(p)
    out["garbage-world-json"] = p = str(d / "garbage_world.mcap")
    _rewrite(good, p, world_json=["{garbage"])
    out["wrong-world-json"] = p = str(d / "wrong_world.mcap")
    _rewrite(good, p, world_json=[json.dumps({"id": 1, "preset": "finger",
                                              "entities": {"finger": {"state": 5}}})])
    out["deep-world-json"] = p = str(d / "deep_world.mcap")
    _rewrite(good, p, world_json=["[" * 200000 + "]" * 200000])
    out["step-2^63"] = p = str(d / "step_2_63.mcap")

    def huge(i, frame):
        if i == 10:
            frame.state.step_count = 1 << 63
    _rewrite(good, p, huge)
    out["jump-999999"] = p = str(d / "jump.mcap")

    def jump(i, frame):
        if i >= 20:
            frame.state.step_count += 999_999
    _rewrite(good, p, jump)
    out["garbage-frame"] = p = str(d / "garbage_frame.mcap")
    _rewrite(good, p, raw_of=lambda i, f: b"\xff" * 7 if i == 5 else f.SerializeToString())
    # a zstd bomb: 1 GiB of zeros in a chunk of a few tens of KB, declaring its size, and the
    # same lying about it (declaring 1000 bytes)
    z = zstandard.ZstdCompressor().compressobj()
    bomb = _zeros_compressed(z.compress, z.flush)
    assert len(bomb) < 100_000, len(bomb)
    out["zstd-bomb"] = p = str(d / "zstd_bomb.mcap")
    _bomb_file(p, "zstd", bomb, BOMB_BYTES)
    out["zstd-bomb-lying"] = p = str(d / "zstd_bomb_lying.mcap")
    _bomb_file(p, "zstd", bomb, 1000)
    lz4 = pytest.importorskip("lz4.frame")
    c = lz4.LZ4FrameCompressor()
    head = c.begin()
    out["lz4-bomb-lying"] = p = str(d / "lz4_bomb_lying.mcap")
    _bomb_file(p, "lz4", head + _zeros_compressed(c.compress, c.flush), 1000)
    return out


CASES = (["truncated-%d" % i for i in range(TRUNCATIONS)] + ["flip-%d" % i for i in range(FLIPS)]
         + ["json", "dev-zero", "directory", "fifo", "garbage-world-json", "wrong-world-json",
            "deep-world-json", "step-2^63", "jump-999999", "garbage-frame", "zstd-bomb",
            "zstd-bomb-lying", "lz4-bomb-lying"])


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def _run(cmd, path, extra=()):
    """(exit status, stdout, stderr, seconds) of `robosim CMD PATH` under the limits."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    src = os.path.dirname(os.path.dirname(os.path.abspath(robosim.__file__)))
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "robosim.cli", cmd, path, *extra],
                       capture_output=True, text=True, timeout=HARD_TIMEOUT, env=env,
                       preexec_fn=_limit_memory, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t


@pytest.fixture(scope="module")
def baseline(files):
    """Seconds the command takes to refuse a directory (the interpreter starting), the slower
    of two runs."""
    return max(_run("verify", files["directory"])[3] for _ in range(2))


def test_the_recording_itself_verifies(files):
    """The files below are this recording, changed: it verifies as it is (exit status 0), under
    the same memory limit."""
    rc, out, err, _ = _run("verify", files["good"])
    assert rc == 0, (out, err)
    assert out.startswith("ok: world 1: 40 frames") and err == ""


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("cmd", ["verify", "fit"])
def test_hostile_file_gives_one_line_and_status_2(files, baseline, case, cmd):
    path = files[case]
    rc, out, err, seconds = _run(cmd, path, FIT if cmd == "fit" else ())
    lines = err.splitlines()
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    assert lines[0].startswith("robosim %s: %s: " % (cmd, path)), err
    assert rc == 2, (rc, err)
    assert out == "", out
    assert seconds < 10 * baseline + 5.0, (seconds, baseline, err)


def test_reasons_name_the_limit(files):
    """The messages say what was wrong, the limits by their value and option."""
    want = {
        "dev-zero": "a character device, not a regular file",
        "directory": "a directory, not a regular file",
        "fifo": "a FIFO, not a regular file",
        "zstd-bomb": "more than the limit of %d" % recording.DEFAULT_LIMITS.chunk_bytes,
        "zstd-bomb-lying": "decompresses to more than 1000 bytes",
        "lz4-bomb-lying": "decompresses to more than 1000 bytes",
        "jump-999999": "the limit is 100000 (--max-step-gap)",
        "step-2^63": "(--max-step-gap)",
        "garbage-world-json": "a world description is not JSON",
        "wrong-world-json": "state is not a list of names",
        "deep-world-json": "nests deeper than the limit",
        "garbage-frame": "is not a StreamFrame",
        "truncated-0": "ends inside the magic bytes",
    }
    for case, text in want.items():
        rc, _, err, _ = _run("verify", files[case])
        assert text in err and rc == 2, (case, err)


def test_fit_refuses_a_gap_and_names_it(files):
    rc, _, err, _ = _run("fit", files["jump-999999"], FIT)
    assert rc == 2 and "frame 21 is at step 1000020" in err, err


def test_limits_are_options(files, tmp_path):
    """Each limit in --help, and each option's limit enforced: a recording of 40 frames is
    refused at --max-frames 39, at --max-steps 39 (fit), at --max-step-gap 0 (not an option
    value: argparse's usage error, status 2)."""
    for cmd in ("verify", "fit"):
        p = subprocess.run([sys.executable, "-m", "robosim.cli", cmd, "--help"],
                           capture_output=True, text=True, timeout=60)
        text = " ".join(p.stdout.split())
        for words in ("--max-file-mib MiB (default 256)", "--max-total-mib MiB (default 512)",
                      "--max-frames frames (default 1000000)", "not a regular file",
                      "exit status:", "2 the file cannot be used"):
            assert words in text, (cmd, words)
    assert "--max-step-gap control steps (default 100000)" in " ".join(
        subprocess.run([sys.executable, "-m", "robosim.cli", "verify", "--help"],
                       capture_output=True, text=True, timeout=60).stdout.split())
    rc, _, err, _ = _run("verify", files["good"], ["--max-frames", "39"])
    assert rc == 2 and "more than the limit of 39 frames" in err, err
    rc, _, err, _ = _run("fit", files["good"], FIT + ["--max-steps", "39"])
    assert rc == 2 and "at most 39 control steps (--max-steps)" in err, err
    rc, _, err, _ = _run("verify", files["good"], ["--max-file-mib", "0"])
    assert rc == 2 and "is not positive" in err, err


def test_world_without_its_values_is_not_verified(files, tmp_path):
    """A description whose parameter is null (a non-finite value kept as JSON null) cannot
    rebuild the world: that world is reported not verified (status 1), in one line on stderr
    after its FAILED line, with no request the server would refuse."""
    info = rec.read_worlds(files["good"])[0]
    info["entities"]["finger"]["params"]["object_x0"] = [None]
    path = str(tmp_path / "null_param.mcap")
    _rewrite(files["good"], path, world_json=[json.dumps(info)])
    rc, out, err, _ = _run("verify", path)
    assert rc == 1 and out.startswith("FAILED: world 1: the recording does not hold "
                                      "finger.object_x0's value"), (out, err)
    assert err == "robosim verify: %s: not every world reproduced (see above)\n" % path, err


def test_library_raises_recording_error(files):
    """The functions behind the commands raise RecordingError (a ValueError), not whatever the
    bytes provoke, for each hostile file."""
    from robosim import fit, verify
    for case in CASES:
        with pytest.raises(recording.RecordingError):
            verify.plan(recording.load(files[case]))
        with pytest.raises(recording.RecordingError):
            fit.load_recording(files[case])


def _npz(path, arrays, header_shape=None):
    """An .npz of `arrays` ({name: array}); header_shape: states.npy's header claims this
    shape instead of its own (its data unchanged)."""
    import io
    import zipfile

    import numpy as np
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, a in arrays.items():
            a = np.asarray(a)
            buf = io.BytesIO()
            if header_shape is not None and name == "states":
                np.lib.format.write_array_header_1_0(buf, {"descr": a.dtype.str,
                                                           "fortran_order": False,
                                                           "shape": tuple(header_shape)})
                buf.write(a.tobytes())
            else:
                np.lib.format.write_array(buf, a, allow_pickle=True)
            z.writestr(name + ".npy", buf.getvalue())


def test_fit_refuses_hostile_npz(tmp_path):
    """fit's other input: an .npz is read header first, numbers only, within the limits."""
    import numpy as np
    cases, want = {}, {}

    def case(name, reason, arrays, **kw):
        cases[name] = str(tmp_path / (name + ".npz"))
        want[name] = reason
        _npz(cases[name], arrays, **kw)
    ok = {"states": np.zeros((3, 6)), "commands": np.zeros((2, 1))}
    case("pickled", "a 1-dimensional object array",
         {"states": np.array([{"a": 1}], dtype=object), "commands": np.zeros((1, 1))})
    case("lying-rows", "3000000 rows; the fit takes at most 20000 control steps", ok,
         header_shape=(3000000, 6))
    case("lying-size", "its header says 14400000 bytes of data, the member holds fewer", ok,
         header_shape=(300, 6000))
    # 2 MiB of zeros (deflated to a few KB) past --max-total-mib 1
    case("too-big", "past the limit of 1048576 bytes in all",
         {"states": np.zeros(((2 << 20) // 48 + 1, 6)), "commands": np.zeros((1, 1))})
    case("no-commands", "no commands array", {"states": np.zeros((3, 6))})
    case("not-finite", "states that are not finite numbers",
         {"states": np.full((3, 6), np.nan), "commands": np.zeros((2, 1))})
    cases["truncated"] = str(tmp_path / "truncated.npz")
    want["truncated"] = "not a readable .npz"
    data = open(cases["lying-size"], "rb").read()
    open(cases["truncated"], "wb").write(data[:len(data) // 2])
    for name, path in cases.items():
        rc, out, err, _ = _run("fit", path, FIT + ["--max-total-mib", "1"])
        assert "Traceback" not in err, err
        assert rc == 2 and len(err.splitlines()) == 1 and want[name] in err, (name, err)
