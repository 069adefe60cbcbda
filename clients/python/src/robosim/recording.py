"""Reading the MCAP recordings robosim record writes (robosim.record): their frames and their
world descriptions. The one reader behind verify, fit, replay and the viewer; its own module so
that the viewer (robosim.view.server) reads recordings without importing the recorder.

A recording is untrusted input. The reader refuses anything that is not a regular file before
reading from it (a directory, a FIFO, a device such as /dev/zero; opened non-blocking, so a FIFO
never blocks), reads the file once from start to end, and holds every size it reads to a limit
(Limits: the file, each record, each chunk and all chunks decompressed, the frames, each world
description) before allocating for it; a compressed chunk is decompressed only up to its declared
size, never past it. Every checksum the file carries is checked (each chunk's, the data
section's, the summary's), so a changed byte is refused rather than replayed. Whatever is wrong
with a file, the reader raises RecordingError with a one-line reason; docs/recordings.md lists
the limits.

    rec = load("run.mcap")          # Recording: frames (world_id, seq, step_count, raw), worlds
    frames = read("run.mcap")       # [(world_id, seq, StreamFrame message, raw bytes), ...]
"""
import json
import math
import os
import re
import stat
import struct
import zlib
from dataclasses import dataclass, field

from ._proto import pb

TOPIC = "/world/%d"
INPUT_TOPIC = "/world/%d/input"
SCHEMA_NAME = "robosim.v1.StreamFrame"
INPUT_SCHEMA_NAME = "robosim.v1.Request"
# the requests an input channel may hold: those that change a world, which verify replays
REPLAYABLE = frozenset({"reset", "step", "set_force", "set_params", "set_schedule",
                        "set_target", "apply_wrench", "load_motion_spec", "clear_motion_spec",
                        "set_state"})
END_RECORD = "robosim.end"  # metadata: a world's frame count, last digest and chain
MAGIC = b"\x89MCAP0\r\n"

MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """What the reader accepts at most; a file past any of them is refused (RecordingError)."""
    file_bytes: int = 256 * MIB     # the file's size
    record_bytes: int = 64 * MIB    # one record as stored (a compressed chunk, a message)
    chunk_bytes: int = 64 * MIB     # one chunk decompressed
    total_bytes: int = 512 * MIB    # all records, chunks decompressed, together
    frames: int = 1_000_000         # frames (messages) in the file
    worlds: int = 10_000            # world descriptions
    json_bytes: int = 1 * MIB       # one world description (JSON)
    json_depth: int = 16            # its nesting depth


DEFAULT_LIMITS = Limits()


class RecordingError(ValueError):
    """A file that is not a recording the reader accepts, with a one-line reason."""


@dataclass
class Recording:
    """A recording as read: frames in file order, each (world_id, seq, step_count, raw bytes of
    the StreamFrame); worlds {id: description} (validated JSON, the viewer's "world" message);
    metadata: the file's "robosim" metadata record."""
    frames: list = field(default_factory=list)
    worlds: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    # {world id: [(seq of the frame it leads to, raw bytes of a robosim.v1.Request)]}, file
    # order: the requests that led to that frame, as sent (REPLAYABLE ones)
    inputs: dict = field(default_factory=dict)
    # {world id: {"frames": n, "digest": hex, "chain": hex}}: the recorder's end records
    ends: dict = field(default_factory=dict)
    # {world id: hex}: the chain (Chain) of the world's frames and inputs, file order, as read
    chains: dict = field(default_factory=dict)

    def decoded(self, world_id=None):
        """[(world_id, seq, StreamFrame, raw)] in file order, of `world_id` only if given."""
        return [(w, s, pb.StreamFrame.FromString(raw), raw) for w, s, _, raw in self.frames
                if world_id is None or w == world_id]


class Chain:
    """BLAKE2b-256 over a world's messages in file order (each a tag byte, its length and its
    bytes): the recorder writes it in the world's end record, the reader computes it, so a
    frame dropped, added, changed or moved is told apart from the recording as written."""

    def __init__(self):
        import hashlib
        self._h = hashlib.blake2b(digest_size=32)

    def add(self, tag, raw):
        self._h.update(tag + struct.pack("<Q", len(raw)))
        self._h.update(raw)

    def hexdigest(self):
        return self._h.hexdigest()


def _end_record(meta):
    """A robosim.end metadata record: (world id, {"frames", "digest", "chain"})."""
    try:
        wid, frames = int(meta.get("world", "")), int(meta.get("frames", ""))
    except ValueError:
        raise RecordingError("an end record whose world or frame count is not an integer") \
            from None
    digest, chain = meta.get("digest", ""), meta.get("chain", "")
    if not (0 <= wid <= _U64 and 0 <= frames and re.fullmatch(r"[0-9a-f]{0,128}", digest)
            and re.fullmatch(r"[0-9a-f]{64}", chain)):
        raise RecordingError("an end record that is not a world id, a frame count, a digest "
                             "and a chain (hexadecimal)")
    return wid, {"frames": frames, "digest": digest, "chain": chain}


# opcodes (the MCAP specification, version 0)
HEADER, FOOTER, SCHEMA, CHANNEL, MESSAGE, CHUNK = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06
METADATA, DATA_END = 0x0C, 0x0F
_TOPIC_RE = re.compile(r"/world/([0-9]{1,20})(/input)?\Z")
_U64 = (1 << 64) - 1


def open_regular(path, max_bytes):
    """A binary file object for `path` if it is a regular file of at most max_bytes; else
    RecordingError. Opened with O_NONBLOCK and checked with fstat before any read, so a FIFO,
    a device or a directory is refused without blocking or reading."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise RecordingError("cannot open: %s" % (exc.strerror or exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
                    "a FIFO" if stat.S_ISFIFO(st.st_mode) else
                    "a character device" if stat.S_ISCHR(st.st_mode) else
                    "a block device" if stat.S_ISBLK(st.st_mode) else
                    "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise RecordingError("%s, not a regular file" % kind)
        if st.st_size > max_bytes:
            raise RecordingError("%d bytes, more than the limit of %d" % (st.st_size, max_bytes))
        return os.fdopen(fd, "rb", buffering=0), st.st_size
    except BaseException:
        os.close(fd)
        raise


class _Buf:
    """Little-endian fields of one record's bytes, each read checked against its end."""

    def __init__(self, data, what):
        self.data, self.pos, self.what = memoryview(data), 0, what

    def take(self, n):
        if n > len(self.data) - self.pos:
            raise RecordingError("%s: a field runs past the end of its record" % self.what)
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u16(self):
        return struct.unpack("<H", self.take(2))[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def text(self):
        raw = self.take(self.u32())
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError:
            raise RecordingError("%s: a string is not UTF-8" % self.what) from None

    def bytes32(self):
        return self.take(self.u32())

    def string_map(self):
        sub = _Buf(self.bytes32(), self.what)
        out = {}
        while sub.pos < len(sub.data):
            k = sub.text()
            out[k] = sub.text()
        return out

    def rest(self):
        return self.take(len(self.data) - self.pos)


def _decompress(compression, data, size, crc, limits, budget):
    """A chunk's records: `data` decompressed to exactly `size` bytes (declared), never more."""
    if size > limits.chunk_bytes:
        raise RecordingError("a chunk of %d bytes decompressed, more than the limit of %d"
                             % (size, limits.chunk_bytes))
    if size > budget:
        raise RecordingError("more than the limit of %d bytes decompressed in all"
                             % limits.total_bytes)
    if compression == "":
        out = bytes(data)
    elif compression == "zstd":
        import zstandard  # the record extra's (robosim.cli names it when missing)
        parts, got = [], 0
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(bytes(data))
            while got <= size:
                part = reader.read(min(size + 1 - got, 4 * MIB))
                if not part:
                    break
                parts.append(part)
                got += len(part)
        except zstandard.ZstdError as exc:
            raise RecordingError("a zstd chunk does not decompress (%s)" % exc) from None
        out = b"".join(parts)
    elif compression == "lz4":
        import lz4.frame
        parts, got = [], 0
        try:
            d = lz4.frame.LZ4FrameDecompressor()
            part = d.decompress(bytes(data), max_length=size + 1)
            while part:
                parts.append(part)
                got += len(part)
                if got > size or d.eof:
                    break
                part = d.decompress(b"", max_length=size + 1 - got)
        except RuntimeError as exc:
            raise RecordingError("an lz4 chunk does not decompress (%s)" % exc) from None
        out = b"".join(parts)
    else:
        raise RecordingError("a chunk compressed with %r, which the reader does not know"
                             % compression[:40])
    if len(out) != size:
        raise RecordingError("a chunk decompresses to %s bytes, not the %d it declares"
                             % ("more than %d" % size if len(out) > size else len(out), size))
    if crc and zlib.crc32(out) != crc:
        raise RecordingError("a chunk's checksum does not match its contents")
    return out


def _json_depth(value, limit, depth=1):
    if depth > limit:
        return False
    if isinstance(value, dict):
        return all(_json_depth(v, limit, depth + 1) for v in value.values())
    if isinstance(value, list):
        return all(_json_depth(v, limit, depth + 1) for v in value)
    return True


def _names(value):
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _number(x):
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool)
                         and math.isfinite(float(x)))


def check_world(info):
    """A world description (the viewer's "world" message) as replay, verify and fit read it;
    RecordingError naming the first thing wrong with it."""
    if not isinstance(info, dict):
        raise RecordingError("a world description is not a JSON object")
    wid = info.get("id")
    if not isinstance(wid, int) or isinstance(wid, bool) or not 0 <= wid <= _U64:
        raise RecordingError("a world description's id is not a 64-bit unsigned integer")
    where = "world %d's description" % wid
    for key in ("preset", "task"):
        if info.get(key) is not None and not isinstance(info[key], str):
            raise RecordingError("%s: %s is not a string" % (where, key))
    ents = info.get("entities")
    if not isinstance(ents, dict):
        raise RecordingError("%s: entities is not an object" % where)
    for name, e in ents.items():
        if not isinstance(e, dict):
            raise RecordingError("%s: entity %.40r is not an object" % (where, name))
        if not isinstance(e.get("kind", ""), str):
            raise RecordingError("%s: entity %.40r: kind is not a string" % (where, name))
        for part in ("state", "sensors", "actuators"):
            if not _names(e.get(part)):
                raise RecordingError("%s: entity %.40r: %s is not a list of names"
                                     % (where, name, part))
        params = e.get("params", {})
        if not isinstance(params, dict) or not all(
                isinstance(v, list) and all(_number(x) for x in v) for v in params.values()):
            raise RecordingError("%s: entity %.40r: params is not an object of lists of "
                                 "finite numbers" % (where, name))
    return info


def _world(meta, limits):
    text = meta.get("json")
    if text is None:
        raise RecordingError("a robosim.world metadata record has no json")
    if len(text) > limits.json_bytes:
        raise RecordingError("a world description of %d bytes, more than the limit of %d"
                             % (len(text), limits.json_bytes))
    try:
        info = json.loads(text)
    except RecursionError:
        info = None
    except ValueError as exc:
        raise RecordingError("a world description is not JSON (%s)" % str(exc)[:80]) from None
    if info is None or not _json_depth(info, limits.json_depth):
        raise RecordingError("a world description nests deeper than the limit of %d"
                             % limits.json_depth)
    return check_world(info)


class _Reader:
    def __init__(self, limits):
        self.limits = limits
        self.schemas, self.channels = {}, {}
        self.out = Recording()
        self.budget = limits.total_bytes
        self.inputs = 0  # input messages read (they count against the frames' limit)
        self.chains = {}  # {world id: Chain}

    def spend(self, n):
        self.budget -= n
        if self.budget < 0:
            raise RecordingError("more than the limit of %d bytes in all (records and "
                                 "chunks decompressed)" % self.limits.total_bytes)

    def record(self, op, body, in_chunk=False):
        """One data-section record (a chunk's records through chunk())."""
        if op == SCHEMA:
            b = _Buf(body, "a schema record")
            sid, name, enc = b.u16(), b.text(), b.text()
            b.bytes32()
            if sid == 0:
                raise RecordingError("a schema record with id 0")
            self._define(self.schemas, sid, (name, enc), "schema")
        elif op == CHANNEL:
            b = _Buf(body, "a channel record")
            cid, sid, topic, enc = b.u16(), b.u16(), b.text(), b.text()
            b.string_map()
            self._define(self.channels, cid, (sid, topic, enc), "channel")
        elif op == MESSAGE:
            self.message(body)
        elif in_chunk:
            raise RecordingError("a chunk holds a record of opcode 0x%02x (only schemas, "
                                 "channels and messages belong there)" % op)
        elif op == CHUNK:
            self.chunk(body)
        elif op == METADATA:
            b = _Buf(body, "a metadata record")
            name, meta = b.text(), b.string_map()
            if name == "robosim.world":
                info = _world(meta, self.limits)
                if info["id"] in self.out.worlds and self.out.worlds[info["id"]] != info:
                    raise RecordingError("two different descriptions of world %d" % info["id"])
                if len(self.out.worlds) >= self.limits.worlds:
                    raise RecordingError("more than the limit of %d world descriptions"
                                         % self.limits.worlds)
                self.out.worlds[info["id"]] = info
            elif name == "robosim":
                self.out.metadata.update(meta)
            elif name == END_RECORD:
                wid, end = _end_record(meta)
                if wid in self.out.ends:
                    raise RecordingError("two end records of world %d" % wid)
                if len(self.out.ends) >= self.limits.worlds:
                    raise RecordingError("more than the limit of %d end records"
                                         % self.limits.worlds)
                self.out.ends[wid] = end
        # other records (indexes, attachments, statistics, unknown opcodes) are skipped

    def _define(self, table, key, value, what):
        if table.get(key, value) != value:
            raise RecordingError("%s %d defined twice, differently" % (what, key))
        table[key] = value

    def message(self, body):
        b = _Buf(body, "a message record")
        cid = b.u16()
        sequence = b.u32()
        b.u64(), b.u64()  # log time, publish time
        raw = bytes(b.rest())
        ch = self.channels.get(cid)
        if ch is None:
            raise RecordingError("a message on channel %d, which no channel record defines"
                                 % cid)
        sid, topic, enc = ch
        m = _TOPIC_RE.match(topic)
        if m is None:
            raise RecordingError("a message on topic %.60r (a recording's topics are /world/<id>"
                                 " and /world/<id>/input)" % topic)
        is_input = m.group(2) is not None
        want = INPUT_SCHEMA_NAME if is_input else SCHEMA_NAME
        if self.schemas.get(sid) != (want, "protobuf") or enc != "protobuf":
            raise RecordingError("a message on %.60r is not a protobuf %s" % (topic, want))
        if len(self.out.frames) + self.inputs >= self.limits.frames:
            raise RecordingError("more than the limit of %d frames" % self.limits.frames)
        wid = int(m.group(1))
        if is_input:
            try:
                op = pb.Request.FromString(raw).WhichOneof("op")
            except Exception as exc:  # protobuf's DecodeError (upb or Python)
                raise RecordingError("an input on %s is not a Request (%s)"
                                     % (topic, str(exc)[:60] or type(exc).__name__)) from None
            if op not in REPLAYABLE:
                raise RecordingError("an input on %s is a %s request, not one that changes a "
                                     "world" % (topic, op or "empty"))
            self.inputs += 1
            self.out.inputs.setdefault(wid, []).append((sequence, raw))
            self._chain(wid).add(b"i", raw)
            return
        try:
            frame = pb.StreamFrame.FromString(raw)
        except Exception as exc:  # protobuf's DecodeError (upb or Python)
            raise RecordingError("a frame on %s is not a StreamFrame (%s)"
                                 % (topic, str(exc)[:60] or type(exc).__name__)) from None
        if frame.world_id != wid or frame.state.world_id != frame.world_id:
            raise RecordingError("a frame on %s says world %d (its state: %d)"
                                 % (topic, frame.world_id, frame.state.world_id))
        self.out.frames.append((frame.world_id, frame.seq, frame.state.step_count, raw))
        self._chain(wid).add(b"f", raw)

    def _chain(self, wid):
        c = self.chains.get(wid)
        if c is None:
            c = self.chains[wid] = Chain()
        return c

    def chunk(self, body):
        b = _Buf(body, "a chunk record")
        b.u64(), b.u64()  # message start and end time
        size, crc, compression = b.u64(), b.u32(), b.text()
        data = b.take(b.u64())
        if b.pos != len(b.data):
            raise RecordingError("a chunk record is longer than its contents")
        records = _decompress(compression, data, size, crc, self.limits, self.budget)
        self.spend(size)
        r = _Buf(records, "a chunk")
        while r.pos < len(r.data):
            op, n = r.take(1)[0], r.u64()
            self.record(op, r.take(n), in_chunk=True)


def load(path, limits=None):
    """The Recording in the MCAP file at `path`, read within `limits` (Limits(); default
    DEFAULT_LIMITS); RecordingError with a one-line reason for any file it does not accept."""
    limits = limits or DEFAULT_LIMITS
    f, size = open_regular(path, limits.file_bytes)
    with f:
        return _read(f, size, limits)


def loads(data, limits=None):
    """The Recording in `data` (bytes of an MCAP file), as load() reads a file: the fuzz
    harness's entry (tests/python/test_recording_fuzz.py)."""
    import io
    limits = limits or DEFAULT_LIMITS
    if len(data) > limits.file_bytes:
        raise RecordingError("%d bytes, more than the limit of %d" % (len(data),
                                                                      limits.file_bytes))
    return _read(io.BytesIO(data), len(data), limits)


def _read(f, size, limits):
    pos = 0
    crc = {"data": 0, "summary": 0}
    section = "data"

    def read_exact(n, what):
        nonlocal pos
        data = f.read(n) if n else b""
        while data is not None and len(data) < n:
            more = f.read(n - len(data))
            if not more:
                break
            data += more
        if data is None or len(data) < n:
            raise RecordingError("ends inside %s at byte %d (truncated?)" % (what, pos))
        pos += n
        crc[section] = zlib.crc32(data, crc[section])
        return data

    if read_exact(8, "the magic bytes") != MAGIC:
        raise RecordingError("not an MCAP file (its first bytes are not MCAP's magic)")
    rd = _Reader(limits)
    first = True
    data_end = None
    while True:
        start = pos
        head = read_exact(9, "a record's opcode and length")
        op, n = head[0], struct.unpack("<Q", head[1:])[0]
        if first and op != HEADER:
            raise RecordingError("the first record is not a header")
        if n > limits.record_bytes:
            raise RecordingError("a record of %d bytes at byte %d, more than the limit of %d"
                                 % (n, start, limits.record_bytes))
        if n > size - pos:
            raise RecordingError("a record at byte %d runs past the end of the file "
                                 "(truncated?)" % start)
        rd.spend(n)
        if op == FOOTER:
            if n != 20:
                raise RecordingError("a footer of %d bytes (20 expected)" % n)
            body = _Buf(read_exact(16, "the footer"), "the footer")
            summary_start, offsets_start = body.u64(), body.u64()
            have = crc["summary"]  # the summary and the footer up to its checksum
            want = struct.unpack("<I", read_exact(4, "the footer"))[0]
            if data_end is None:
                raise RecordingError("a footer with no data end record before it (truncated "
                                     "or damaged)")
            if summary_start not in (0, data_end) or (
                    summary_start == 0 and start != data_end):
                raise RecordingError("the footer's summary offset (%d) is not where the summary "
                                     "starts (%d)" % (summary_start, data_end))
            if offsets_start and not data_end <= offsets_start <= start:
                raise RecordingError("the footer's summary offset section (%d) lies outside "
                                     "the summary" % offsets_start)
            if want and have != want:
                raise RecordingError("the summary's checksum does not match its contents")
            if read_exact(8, "the closing magic bytes") != MAGIC:
                raise RecordingError("the footer is not followed by MCAP's magic")
            if f.read(1):
                raise RecordingError("bytes after the closing magic")
            rd.out.chains = {w: c.hexdigest() for w, c in rd.chains.items()}
            return rd.out
        if section == "summary":
            read_exact(n, "a summary record")
            continue
        body = read_exact(n, "a record")
        if first:
            first = False
            continue
        if op == DATA_END:
            want = struct.unpack("<I", body[:4])[0] if n >= 4 else 0
            # crc["data"] now covers this record too: append it to the CRC it declares
            if want and zlib.crc32(head + body, want) != crc["data"]:
                raise RecordingError("the data section's checksum does not match its contents")
            data_end = pos
            section = "summary"
            continue
        if op == HEADER:
            raise RecordingError("a second header at byte %d" % start)
        rd.record(op, body)


def read_worlds(path, limits=None):
    """The world descriptions a recording holds (the viewer's "world" messages), file order."""
    return list(load(path, limits).worlds.values())


def read(path, world_id=None, limits=None):
    """The frames of a recording, in file order: a list of (world_id, seq, StreamFrame message,
    raw bytes)."""
    return load(path, limits).decoded(world_id)


# The command line's side (robosim verify, robosim fit): the limits as options, and every error
# as one line with its exit status.

LIMITS_HELP = """\
The recording is read within these limits (a file past one is refused, exit status 2): a regular
file only (never a directory, FIFO or device), at most --max-file-mib MiB (default %d); one
record at most %d MiB as stored and one chunk at most %d MiB decompressed (a compressed chunk is
decompressed only up to the size it declares); at most --max-total-mib MiB (default %d) of
records and decompressed chunks in all; at most --max-frames frames (default %d); world
descriptions of at most %d KiB of JSON nested at most %d deep. Memory stays within about the
total plus 300 bytes a frame, reading time is linear in the file (no seeking, no retries) and
nothing blocks; every checksum in the file is checked.
""" % (DEFAULT_LIMITS.file_bytes // MIB, DEFAULT_LIMITS.record_bytes // MIB,
       DEFAULT_LIMITS.chunk_bytes // MIB, DEFAULT_LIMITS.total_bytes // MIB,
       DEFAULT_LIMITS.frames, DEFAULT_LIMITS.json_bytes // 1024, DEFAULT_LIMITS.json_depth)


def positive_int(text):
    """argparse type: an integer >= 1."""
    import argparse
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text) from None
    if v < 1:
        raise argparse.ArgumentTypeError("%d is not positive" % v)
    return v


def add_limit_options(parser):
    """--max-file-mib, --max-total-mib, --max-frames (Limits) on an argparse parser."""
    d = DEFAULT_LIMITS
    parser.add_argument("--max-file-mib", type=positive_int, default=d.file_bytes // MIB,
                        metavar="MIB", help="the file's size, at most (default %(default)d)")
    parser.add_argument("--max-total-mib", type=positive_int, default=d.total_bytes // MIB,
                        metavar="MIB", help="records and decompressed chunks in all, at most "
                                            "(default %(default)d)")
    parser.add_argument("--max-frames", type=positive_int, default=d.frames, metavar="N",
                        help="frames in the file, at most (default %(default)d)")


def limits_from_args(args):
    import dataclasses
    return dataclasses.replace(DEFAULT_LIMITS, file_bytes=args.max_file_mib * MIB,
                               total_bytes=args.max_total_mib * MIB, frames=args.max_frames)


EXIT_FAILED, EXIT_INPUT, EXIT_REPLAY = 1, 2, 3  # robosim verify's and fit's exit statuses


class CommandFailed(Exception):
    """What a command checked did not hold (exit status 1): a world that did not reproduce, a
    fit that did not converge."""


class UsageError(ValueError):
    """An option a command cannot use (exit status 2)."""


def _one_line(text):
    return " ".join(str(text).replace("\r", "\n").split("\n")).strip() or "(no message)"


def run_command(name, path, fn):
    """fn()'s exit status, or for an error one line "robosim NAME: PATH: REASON" on stderr and
    its status: 1 CommandFailed, 2 RecordingError or UsageError (the input), 3 anything else
    (the server's errors, a replay that could not run). No traceback for any input."""
    import sys
    from .errors import RobosimError
    try:
        return fn()
    except CommandFailed as exc:
        code, msg = EXIT_FAILED, str(exc)
    except (RecordingError, UsageError) as exc:
        code, msg = EXIT_INPUT, str(exc)
    except RobosimError as exc:
        code, msg = EXIT_REPLAY, "the replay could not run: %s" % exc
    except MemoryError:
        code, msg = EXIT_REPLAY, "out of memory"
    except ImportError:
        raise  # a missing extra: robosim.cli names the one that installs it
    except Exception as exc:  # noqa: BLE001 - no traceback for any file, whatever it holds
        code, msg = EXIT_REPLAY, "the replay could not run: %s: %s" % (type(exc).__name__,
                                                                        exc)
    print("robosim %s: %s: %s" % (name, _one_line(path), _one_line(msg)[:2000]),
          file=sys.stderr, flush=True)
    return code
