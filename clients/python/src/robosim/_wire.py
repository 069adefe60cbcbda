"""Requests and replies in protobuf's wire format built and read directly, for the hot paths that
message objects make slow: a single environment's Step (step_request_tail) and the columnar
StepBatch (ArraysRequest, read_arrays_reply), whose numeric columns go between the socket's bytes
and numpy arrays without a Python object per value.

Every tag used here is taken from the generated descriptors at import, and each field's type,
repetition and packing is checked there against what the bytes below assume: a proto change that
breaks them fails the import with the field's name, not a server's MALFORMED at run time."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._proto import pb

VARINT, I64, LEN = 0, 1, 2  # protobuf wire types
_FD = pb.Request.DESCRIPTOR.fields_by_name["id"]  # any FieldDescriptor: its TYPE_* constants


def _varint(n: int) -> bytes:
    """n (>= 0) as a protobuf varint; the request ids' one- to three-byte forms without a
    loop (step_request_tail runs per step)."""
    if n < 0x80:
        return bytes((n,))
    if n < 0x4000:
        return bytes((n & 0x7F | 0x80, n >> 7))
    if n < 0x200000:
        return bytes((n & 0x7F | 0x80, (n >> 7) & 0x7F | 0x80, n >> 14))
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _repeated(f: Any) -> bool:
    rep = getattr(f, "is_repeated", None)
    return rep if rep is not None else f.label == f.LABEL_REPEATED


def field(message: Any, name: str, ftype: int, repeated: bool = False) -> Any:
    """The FieldDescriptor of `message`.`name`, checked to be of type `ftype` (a TYPE_*
    constant), repeated (and then packed, for scalars) exactly when `repeated` says: the facts the
    hand-built bytes rely on. RuntimeError naming the field otherwise."""
    f = message.DESCRIPTOR.fields_by_name.get(name)
    what = "%s.%s" % (message.DESCRIPTOR.full_name, name)
    if f is None:
        raise RuntimeError("robosim._wire: the protocol has no field %s" % what)
    packed = getattr(f, "is_packed", True)  # proto3 packs repeated scalars unless told not to
    scalar = ftype not in (f.TYPE_MESSAGE, f.TYPE_STRING, f.TYPE_BYTES)
    if f.type != ftype or _repeated(f) != repeated or (repeated and scalar and not packed):
        raise RuntimeError("robosim._wire: %s is not the %s%s field (type %d) the wire code "
                           "assumes; update robosim/_wire.py with the proto"
                           % (what, "packed repeated " if repeated else "", ftype, f.type))
    return f


def tag(f: Any) -> bytes:
    """The tag bytes of field `f` as this module writes it (packed or length-delimited: LEN;
    other scalars by their wire type)."""
    if _repeated(f) or f.type in (f.TYPE_MESSAGE, f.TYPE_STRING, f.TYPE_BYTES):
        wt = LEN
    elif f.type in (f.TYPE_DOUBLE, f.TYPE_FIXED64, f.TYPE_SFIXED64):
        wt = I64
    else:
        wt = VARINT
    return _varint(f.number << 3 | wt)


def varints(values: np.ndarray) -> bytes:
    """Non-negative integers (any integer or bool array) as concatenated varints (a packed
    repeated integer field's payload), without a Python loop over the values."""
    a = np.ascontiguousarray(values, dtype=np.uint64)
    if a.size == 0:
        return b""
    if int(a.max()) < 0x80:
        return a.astype(np.uint8).tobytes()
    width = np.ones(a.shape, dtype=np.int64)
    for k in range(1, 10):
        width += a >= np.uint64(1 << (7 * k))
    groups = np.empty((a.size, 10), dtype=np.uint8)
    for k in range(10):
        more = (width > k + 1).astype(np.uint8) << 7
        groups[:, k] = ((a >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8) | more
    return groups[np.arange(10) < width[:, None]].tobytes()


def read_varints(buf: Any, n: Optional[int] = None) -> np.ndarray:
    """A packed repeated integer field's payload (bytes or memoryview) as a uint64 array; n:
    the number of values when known (n values in n bytes are one byte each)."""
    size = len(buf)
    if size == n:
        return np.frombuffer(buf, dtype=np.uint8).astype(np.uint64)
    if size <= 64:  # a few values: a plain loop costs less than numpy's calls
        out, v, shift = [], 0, 0
        for c in bytes(buf):
            v |= (c & 0x7F) << shift
            shift += 7
            if c < 0x80:
                out.append(v)
                v = shift = 0
        return np.array(out, dtype=np.uint64)
    b = np.frombuffer(buf, dtype=np.uint8)
    if n and size % n == 0 and size // n <= 10:  # all of one width (step counts, mostly)
        w = b.reshape(n, size // n)
        if (w[:, -1] < 0x80).all() and (w[:, :-1] >= 0x80).all():
            low = (w & 0x7F).astype(np.uint64)
            out = low[:, 0].copy()
            for k in range(1, w.shape[1]):
                out |= low[:, k] << np.uint64(7 * k)
            return out
    ends = np.flatnonzero(b < 0x80)
    starts = np.concatenate(([0], ends[:-1] + 1))
    group = np.repeat(np.arange(len(ends)), ends - starts + 1)
    shifts = (7 * (np.arange(len(b)) - starts[group])).astype(np.uint64)
    return np.bitwise_or.reduceat((b & 0x7F).astype(np.uint64) << shifts, starts)


def _read_varint(buf: memoryview, i: int) -> tuple:
    """(the varint at buf[i], the index after it); IndexError past the end."""
    v = shift = 0
    while True:
        c = buf[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _scan(buf: memoryview, start: int, end: int) -> Optional[dict]:
    """The fields of the message in buf[start:end]: {number: [(wire type, value or (begin,
    end) of a LEN payload)]}; None when the bytes do not parse. One-byte keys and lengths (the
    common case) are read inline."""
    out: dict = {}
    i = start
    try:
        while i < end:
            key = buf[i]
            if key < 0x80:
                i += 1
            else:
                key, i = _read_varint(buf, i)
            wt = key & 7
            v: Any
            if wt == LEN:
                n = buf[i]
                if n < 0x80:
                    i += 1
                else:
                    n, i = _read_varint(buf, i)
                v = (i, i + n)
                i += n
            elif wt == VARINT:
                v, i = _read_varint(buf, i)
            elif wt == I64:
                v = (i, i + 8)
                i += 8
            elif wt == 5:
                v = (i, i + 4)
                i += 4
            else:
                return None
            field = key >> 3
            if field in out:
                out[field].append((wt, v))
            else:
                out[field] = [(wt, v)]
    except IndexError:
        return None
    return out if i == end else None


# ---- the single environment's Step -----------------------------------------------------------

_REQ_ID = tag(field(pb.Request, "id", _FD.TYPE_UINT64))
_STEP_FIELD = tag(field(pb.Request, "step", _FD.TYPE_MESSAGE))
_ONE_STEP = tag(field(pb.Step, "steps", _FD.TYPE_UINT32)) + _varint(1)
_ACTION_FIELD = tag(field(pb.Step, "action", _FD.TYPE_DOUBLE, repeated=True))
_STEP_HEADS: dict = {}  # action bytes -> the bytes before them (step_request_tail)


def step_request_tail(rid: int, action: Any) -> bytes:
    """The bytes of Request{id: rid, step: Step{steps: 1, action}} in protobuf's wire format,
    to follow a serialized Request holding world_id and token (serialized messages concatenate
    into their merge). Built directly, without message objects: the single environment's step
    is the client's hottest path (tests/python/test_client.py checks it parses to the Request
    protobuf builds)."""
    packed = action if type(action) is bytes else np.ascontiguousarray(action,
                                                                        dtype="<f8").tobytes()
    head = _STEP_HEADS.get(len(packed))
    if head is None:  # Request.step's tag and length, Step.steps, Step.action's tag and length
        body = _ONE_STEP + _ACTION_FIELD + _varint(len(packed))
        head = _STEP_HEADS[len(packed)] = _STEP_FIELD + _varint(len(body) + len(packed)) + body
    return _REQ_ID + _varint(rid) + head + packed


# ---- the columnar StepBatch ------------------------------------------------------------------

_BATCH_FIELD = tag(field(pb.Request, "step_batch", _FD.TYPE_MESSAGE))
_ARRAYS_FIELD = tag(field(pb.StepBatch, "arrays", _FD.TYPE_MESSAGE))
_A = pb.BatchArrays
_A_IDS = tag(field(_A, "world_ids", _FD.TYPE_UINT64, repeated=True))
_A_TOKENS = tag(field(_A, "tokens", _FD.TYPE_STRING, repeated=True))
_A_STEPS = tag(field(_A, "steps", _FD.TYPE_UINT32))
_A_COMMANDS = tag(field(_A, "commands", _FD.TYPE_DOUBLE, repeated=True))
_A_ACTIONS = tag(field(_A, "actions", _FD.TYPE_DOUBLE, repeated=True))
_A_RESET = tag(field(_A, "reset", _FD.TYPE_BOOL, repeated=True))
_A_SEEDS = tag(field(_A, "reset_seeds", _FD.TYPE_UINT64, repeated=True))


def _len_field(tag_bytes: bytes, payload: bytes) -> bytes:
    return tag_bytes + _varint(len(payload)) + payload


class ArraysRequest:
    """The StepBatch.arrays requests of one fixed list of worlds: the world ids, tokens and step
    count are encoded once; each request adds only its id and its columns' bytes."""

    def __init__(self, world_ids: Any, tokens: Any, steps: int = 1) -> None:
        ids = np.asarray(world_ids, dtype=np.uint64)
        self.world_ids = ids
        self.n = len(ids)
        self._fixed = (_len_field(_A_IDS, varints(ids))
                       + b"".join(_len_field(_A_TOKENS, t.encode()) for t in tokens)
                       + (_A_STEPS + _varint(int(steps)) if steps else b""))

    def encode(self, rid: int, actions: Optional[np.ndarray] = None,
               commands: Optional[np.ndarray] = None, reset: Optional[np.ndarray] = None,
               reset_seeds: Optional[np.ndarray] = None) -> bytes:
        """The serialized Request{id: rid, step_batch: {arrays: ...}} with these columns
        (float64 arrays of n rows; reset booleans and reset_seeds, one per world, or None)."""
        parts = [self._fixed]
        if actions is not None:
            parts.append(_len_field(_A_ACTIONS, np.ascontiguousarray(actions, "<f8").tobytes()))
        if commands is not None:
            parts.append(_len_field(_A_COMMANDS,
                                    np.ascontiguousarray(commands, "<f8").tobytes()))
        if reset is not None:
            parts.append(_len_field(_A_RESET, np.ascontiguousarray(reset, np.bool_)
                                    .view(np.uint8).tobytes()))
        if reset_seeds is not None:
            parts.append(_len_field(_A_SEEDS, varints(reset_seeds)))
        arrays = b"".join(parts)
        batch = _len_field(_ARRAYS_FIELD, arrays)
        return _REQ_ID + _varint(rid) + _len_field(_BATCH_FIELD, batch)


_RSP = pb.Response
_RSP_ID = field(_RSP, "id", _FD.TYPE_UINT64).number
_RSP_BATCH = field(_RSP, "step_batch", _FD.TYPE_MESSAGE).number
_RSP_ERROR = field(_RSP, "error", _FD.TYPE_MESSAGE).number
_RSP_ARRAYS = field(pb.StepBatchReply, "arrays", _FD.TYPE_MESSAGE).number
_R = pb.BatchArraysReply
_R_NUM = {name: field(_R, name, t, rep).number for name, t, rep in [
    ("codes", _FD.TYPE_ENUM, True), ("errors", _FD.TYPE_MESSAGE, True),
    ("state_size", _FD.TYPE_UINT32, False), ("sensor_size", _FD.TYPE_UINT32, False),
    ("observation_size", _FD.TYPE_UINT32, False), ("time", _FD.TYPE_DOUBLE, True),
    ("step_count", _FD.TYPE_UINT64, True), ("events", _FD.TYPE_UINT32, True),
    ("state", _FD.TYPE_DOUBLE, True), ("sensors", _FD.TYPE_DOUBLE, True),
    ("observation", _FD.TYPE_DOUBLE, True), ("reward", _FD.TYPE_DOUBLE, True),
    ("terminated", _FD.TYPE_BOOL, True), ("truncated", _FD.TYPE_BOOL, True),
    ("info_size", _FD.TYPE_UINT32, False), ("info_keys", _FD.TYPE_STRING, True),
    ("info", _FD.TYPE_DOUBLE, True), ("digests", _FD.TYPE_BYTES, False),
    ("randomized_items", _FD.TYPE_STRING, True), ("randomized", _FD.TYPE_DOUBLE, True)]}
_DOUBLES = ("time", "state", "sensors", "observation", "reward", "info", "randomized")
_BOOLS = ("terminated", "truncated")
_SIZES = ("state_size", "sensor_size", "observation_size", "info_size")


def response_id(data: bytes) -> Optional[int]:
    """The id of the Response in `data` (its first field, as the server writes it), or None
    when the bytes do not start with one."""
    key = _RSP_ID << 3 | VARINT
    if not data or data[0] != key:
        return None
    v = shift = 0
    for c in data[1:11]:
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v
    return None


def read_arrays_reply(data: bytes, n: int) -> Optional[dict]:
    """The columns of the Response in `data` answering a StepBatch.arrays of n worlds, as numpy
    arrays over `data`'s bytes (read-only views, no copy): {"id", the sizes, "time", "state",
    "sensors", "observation", "reward", "info", "randomized" (float64, the 2-D ones shaped
    (n, size)), "terminated", "truncated" (bool), "codes", "events", "step_count" (uint64),
    "digests" (bytes), "info_keys", "randomized_items" (lists)}, every column present even when
    empty. None when the reply is anything else (an Error, worlds refused: "codes" not all 0
    and "errors" set, a field in a form this reader does not take): the caller then reads it
    with the generated classes."""
    buf = memoryview(data)
    top = _scan(buf, 0, len(buf))
    if not top or _RSP_BATCH not in top or _RSP_ERROR in top:
        return None
    wt, (b0, b1) = top[_RSP_BATCH][-1]
    batch = _scan(buf, b0, b1) if wt == LEN else None
    if batch is None or _RSP_ARRAYS not in batch:
        return None
    wt, (a0, a1) = batch[_RSP_ARRAYS][-1]
    f = _scan(buf, a0, a1) if wt == LEN else None
    if f is None or _R_NUM["errors"] in f:
        return None
    out: dict = {"id": top[_RSP_ID][-1][1] if _RSP_ID in top else 0}
    for name in _SIZES:
        entries = f.get(_R_NUM[name])
        out[name] = entries[-1][1] if entries else 0

    def payload(name):
        entries = f.get(_R_NUM[name])
        if entries is None:
            return b""
        if len(entries) == 1 and entries[0][0] == LEN:
            s, e = entries[0][1]
            return buf[s:e]
        if any(wt != LEN for wt, _ in entries):
            raise ValueError(name)  # an unpacked scalar: left to the generated classes
        return b"".join(bytes(buf[s:e]) for _, (s, e) in entries)

    try:
        for name in _DOUBLES:
            out[name] = np.frombuffer(payload(name), dtype="<f8")
        for name in _BOOLS:
            out[name] = np.frombuffer(payload(name), dtype=np.bool_)
        for name in ("codes", "events", "step_count"):
            out[name] = read_varints(payload(name), n)
    except ValueError:
        return None
    for name in ("info_keys", "randomized_items"):
        out[name] = [bytes(buf[s:e]).decode() for _, (s, e) in f.get(_R_NUM[name], ())]
    dig = f.get(_R_NUM["digests"])
    out["digests"] = bytes(buf[slice(*dig[-1][1])]) if dig else b""
    if out["codes"].any():
        return None
    for name, size in (("state", "state_size"), ("sensors", "sensor_size"),
                       ("observation", "observation_size"), ("info", "info_size")):
        if len(out[name]) != n * out[size]:
            return None
        out[name] = out[name].reshape(n, out[size])
    nr = len(out["randomized_items"])
    out["randomized"] = out["randomized"].reshape(n, nr) if nr else np.zeros((n, 0))
    for name in ("time", "codes", "events", "step_count"):
        if len(out[name]) != n:
            return None
    if out["observation_size"]:
        for name in ("reward", "terminated", "truncated"):
            if len(out[name]) != n:
                return None
    return out
