"""The sandbox's wire formats, in one place and pure (no I/O, no fork), as in h11.

Two wires:

- runner <-> helper (the helper's stdin/stdout): length-prefixed frames of JSON.
  The helper's first frame is a `Hello`; then every `Request` gets one `Reply`
  with the same id (replies may come in any order).
- helper <-> child: the helper writes one marshalled `Job` into the child's
  memfd; the child writes one frame of JSON back, an `Outcome`.

A frame is an 8-byte little-endian length, then that many bytes. Every decoder
checks types and refuses unknown error kinds with `ProtocolError`, so a hostile
child (or a corrupted pipe) can only produce a refused frame, never an odd value
further on. `Limits` are encoded in one shape (`encode_limits`) on both wires.
"""

from __future__ import annotations

import json
import marshal
import struct
from dataclasses import dataclass, replace
from types import CodeType
from typing import Any, Literal, get_args

ErrorKind = Literal["lint", "compile", "runtime", "denied", "timeout", "memory", "output"]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)
HEADER = struct.Struct("<Q")
MAX_REQUEST = 64 << 20  # bytes of one request frame (source + params + secrets)
JOB_VERSION = 2


class ProtocolError(ValueError):
    """A frame or document that breaks the protocol."""


class FrameTooLarge(ProtocolError):
    """A frame announces more bytes than the reader accepts."""


def frame(data: bytes) -> bytes:
    return HEADER.pack(len(data)) + data


def unframe(buf: bytes | bytearray) -> bytes | None:
    """The document of a complete frame at the start of `buf`, else None."""
    if len(buf) < HEADER.size:
        return None
    (size,) = HEADER.unpack_from(buf)
    end = HEADER.size + size
    return bytes(buf[HEADER.size : end]) if len(buf) >= end else None


class FrameReader:
    """Incremental frame decoder: feed bytes as they arrive, get complete frames."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The frames completed by `data`; raises FrameTooLarge on an oversize header."""
        buf = self._buf
        buf += data
        out: list[bytes] = []
        start = 0
        while len(buf) - start >= HEADER.size:
            (size,) = HEADER.unpack_from(buf, start)
            if size > self.max_size:
                raise FrameTooLarge(f"a frame of {size} bytes; the limit is {self.max_size}")
            end = start + HEADER.size + size
            if len(buf) < end:
                break
            out.append(bytes(buf[start + HEADER.size : end]))
            start = end
        if start:
            del buf[:start]
        return out

    def buffered(self) -> int:
        """Bytes of an incomplete frame held back."""
        return len(self._buf)


# -- limits -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Limits:
    """The rlimits of one child call."""

    cpu_s: int = 5
    address_space: int = 768 * 1024 * 1024
    open_files: int = 64
    file_size: int = 16 * 1024 * 1024

    def for_timeout(self, timeout_s: float) -> Limits:
        """These limits with the CPU time the call's wall-clock timeout allows."""
        return replace(self, cpu_s=int(timeout_s) + 1)


def encode_limits(limits: Limits) -> list[int]:
    return [limits.cpu_s, limits.address_space, limits.open_files, limits.file_size]


def decode_limits(value: object) -> Limits:
    if not (
        isinstance(value, list | tuple)
        and len(value) == 4
        and all(type(v) is int and v >= 0 for v in value)
    ):
        raise ProtocolError(f"limits must be four non-negative integers, not {value!r}")
    return Limits(*value)


# -- runner <-> helper ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hello:
    pid: int
    zygote: int
    capabilities: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Request:
    id: int
    source: str
    params: dict[str, Any]
    workspace: str
    secrets: dict[str, str]
    timeout_s: float
    max_output: int
    limits: Limits
    trace: bool = False


@dataclass(frozen=True, slots=True)
class Failure:
    kind: ErrorKind
    message: str


Marks = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Reply:
    id: int
    ok: bool
    result: Any = None
    printed: str = ""
    error: Failure | None = None
    duration_ms: float = 0.0
    trace: Marks = ()


def _json(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def _load(doc: bytes) -> dict[str, Any]:
    try:
        data = json.loads(doc)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("not a JSON object")
    return data


def _field(data: dict[str, Any], key: str, *types: type) -> Any:
    value = data.get(key)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise ProtocolError(f"{key!r} has the wrong type")
    return value


def _str_dict(value: dict[str, Any], what: str) -> dict[str, str]:
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ProtocolError(f"{what} must map strings to strings")
    return value


def _kind(value: object) -> ErrorKind:
    for kind in ERROR_KINDS:
        if value == kind:
            return kind
    raise ProtocolError(f"unknown error kind {value!r}")


def _marks(value: object) -> Marks:
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(
        isinstance(m, list | tuple) and len(m) == 2 and isinstance(m[0], str) and type(m[1]) is int
        for m in value
    ):
        raise ProtocolError("trace must be a list of [name, nanoseconds]")
    return tuple((str(n), int(t)) for n, t in value)


def encode_hello(hello: Hello) -> bytes:
    msg = {"op": "hello", "pid": hello.pid, "zygote": hello.zygote}
    return frame(_json({**msg, "capabilities": hello.capabilities}))


def decode_hello(doc: bytes) -> Hello:
    data = _load(doc)
    if data.get("op") != "hello":
        raise ProtocolError("the first frame must be a hello")
    caps = _field(data, "capabilities", dict)
    return Hello(_field(data, "pid", int), _field(data, "zygote", int), caps)


def encode_request(req: Request) -> bytes:
    doc = {
        "id": req.id,
        "source": req.source,
        "params": req.params,
        "workspace": req.workspace,
        "secrets": req.secrets,
        "timeout_s": req.timeout_s,
        "max_output": req.max_output,
        "limits": encode_limits(req.limits),
        "trace": req.trace,
    }
    return frame(_json(doc))


def decode_request(doc: bytes) -> Request:
    data = _load(doc)
    return Request(
        id=_field(data, "id", int),
        source=_field(data, "source", str),
        params=_field(data, "params", dict),
        workspace=_field(data, "workspace", str),
        secrets=_str_dict(_field(data, "secrets", dict), "secrets"),
        timeout_s=float(_field(data, "timeout_s", int, float)),
        max_output=_field(data, "max_output", int),
        limits=decode_limits(data.get("limits")),
        trace=_field(data, "trace", bool),
    )


def encode_reply(reply: Reply) -> bytes:
    doc: dict[str, Any] = {
        "id": reply.id,
        "ok": reply.ok,
        "result": reply.result if reply.ok else None,
        "printed": reply.printed,
        "error": None
        if reply.error is None
        else {"kind": reply.error.kind, "message": reply.error.message},
        "duration_ms": reply.duration_ms,
    }
    if reply.trace:
        doc["trace"] = reply.trace
    return frame(_json(doc))


def decode_reply(doc: bytes) -> Reply:
    data = _load(doc)
    ok = _field(data, "ok", bool)
    error = None
    if not ok:
        err = _field(data, "error", dict)
        error = Failure(_kind(err.get("kind")), _field(err, "message", str))
    return Reply(
        id=_field(data, "id", int),
        ok=ok,
        result=data.get("result") if ok else None,
        printed=_field(data, "printed", str),
        error=error,
        duration_ms=float(_field(data, "duration_ms", int, float)),
        trace=_marks(data.get("trace")),
    )


# -- helper <-> child -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Job:
    """One call as a child receives it."""

    code: CodeType
    params: dict[str, Any]
    workspace: str
    secrets: dict[str, str]
    limits: Limits
    max_output: int
    trace: bool = False


def encode_job(code: bytes, req: Request, workspace: str) -> bytes:
    """The bytes the helper hands a child: `code` is an already marshalled code object,
    `workspace` the request's workspace resolved by the helper."""
    lim = encode_limits(req.limits)
    fields = (JOB_VERSION, code, req.params, workspace, req.secrets, lim, req.max_output)
    return marshal.dumps((*fields, req.trace))


def decode_job(data: bytes) -> Job:
    try:
        version, code, params, workspace, secrets, lim, max_output, trace = marshal.loads(data)
    except (ValueError, EOFError, TypeError) as exc:
        raise ProtocolError(f"not a job: {exc}") from None
    if version != JOB_VERSION:
        raise ProtocolError(f"job format {version} is not {JOB_VERSION}")
    code_obj = marshal.loads(code)
    if not isinstance(code_obj, CodeType):
        raise ProtocolError("the job's code is not a code object")
    return Job(code_obj, params, workspace, secrets, decode_limits(lim), max_output, bool(trace))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a child reports: a result, or a failure."""

    ok: bool
    result: Any = None
    printed: str = ""
    error: Failure | None = None
    trace: Marks = ()


def success_doc(result: Any, printed: str) -> dict[str, Any]:
    """The child's document of a finished call (serialised inside the child)."""
    return {"ok": True, "result": result, "printed": printed}


def failure_doc(kind: ErrorKind, message: str) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "message": message}


def decode_outcome(doc: bytes) -> Outcome:
    data = _load(doc)
    trace = _marks(data.get("trace"))
    if _field(data, "ok", bool):
        printed = _field(data, "printed", str)
        return Outcome(True, data.get("result"), printed, None, trace)
    failure = Failure(_kind(data.get("kind")), _field(data, "message", str))
    return Outcome(False, None, "", failure, trace)
