"""The runner <-> helper wire: a `Hello`, then one `Reply` per `Request`, as frames
of JSON on the helper's stdin/stdout (replies may come in any order). A helper
that can serve no more calls (its zygote stopped answering: forge.worker) first
writes `RETIRE`: new calls go to a new helper, and so do the calls it names, which no
child took."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from forge.protocol.answers import TOKEN_SIZE
from forge.protocol.fields import (
    Failure,
    Marks,
    dump,
    error_kind,
    field,
    load,
    marks,
    str_tuple,
)
from forge.protocol.frames import ProtocolError, frame
from forge.protocol.limits import Limits, decode_limits, encode_limits

MAX_REQUEST = 64 << 20  # bytes of one request frame (source + params)
RETIRE_OP = "retire"


def retire_frame(unserved: Sequence[int]) -> bytes:
    """The `RETIRE` frame: no new call to this helper; the calls of `unserved` (their
    request ids) never reached a child, so nothing of them ran: the runner runs them
    again in a new helper."""
    return frame(dump({"op": RETIRE_OP, "unserved": list(unserved)}))


def unserved_ids(data: Mapping[str, object]) -> tuple[int, ...]:
    """The request ids a decoded `RETIRE` frame names (anything else is ignored)."""
    ids = data.get("unserved")
    if not isinstance(ids, list):
        return ()
    return tuple(i for i in ids if type(i) is int)


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
    secret_names: tuple[str, ...]  # names only: vault values stay with the runner
    timeout_s: float
    max_output: int
    limits: Limits
    trace: bool = False
    # the call's secret for a direct answer (forge.protocol.answers); b"": through the helper
    token: bytes = b""


@dataclass(frozen=True, slots=True)
class Reply:
    id: int
    ok: bool
    result: Any = None
    printed: str = ""
    error: Failure | None = None
    duration_ms: float = 0.0
    trace: Marks = ()


def encode_hello(hello: Hello) -> bytes:
    msg = {"op": "hello", "pid": hello.pid, "zygote": hello.zygote}
    return frame(dump({**msg, "capabilities": hello.capabilities}))


def decode_hello(doc: bytes) -> Hello:
    data = load(doc)
    if data.get("op") != "hello":
        raise ProtocolError("the first frame must be a hello")
    caps = field(data, "capabilities", dict)
    return Hello(field(data, "pid", int), field(data, "zygote", int), caps)


def encode_request(req: Request, extra: Mapping[str, Any] | None = None) -> bytes:
    """`req`'s frame; `extra`: what the runner tells the helper with it about the
    children lent to it (forge.protocol.lending: `give`, `drop`), whether it
    needs this tool's code (`code`) and whether another call of this helper was in
    flight when this one started (`busy`, forge.child_pool `ChildPool.overlap`)."""
    doc: dict[str, Any] = {
        **(extra or {}),
        "id": req.id,
        "source": req.source,
        "params": req.params,
        "workspace": req.workspace,
        "secret_names": list(req.secret_names),
        "timeout_s": req.timeout_s,
        "max_output": req.max_output,
        "limits": encode_limits(req.limits),
        "trace": req.trace,
        "token": req.token.hex(),
    }
    return frame(dump(doc))


def decode_request(doc: bytes) -> Request:
    return request_of(load(doc))


def request_of(data: dict[str, Any]) -> Request:
    return Request(
        id=field(data, "id", int),
        source=field(data, "source", str),
        params=field(data, "params", dict),
        workspace=field(data, "workspace", str),
        secret_names=str_tuple(field(data, "secret_names", list), "secret_names"),
        timeout_s=float(field(data, "timeout_s", int, float)),
        max_output=field(data, "max_output", int),
        limits=decode_limits(data.get("limits")),
        trace=field(data, "trace", bool),
        token=_token(data.get("token", "")),
    )


def _token(value: object) -> bytes:
    if not isinstance(value, str):
        raise ProtocolError("'token' has the wrong type")
    try:
        token = bytes.fromhex(value)
    except ValueError:
        raise ProtocolError("'token' is not hex") from None
    if len(token) not in (0, TOKEN_SIZE):
        raise ProtocolError(f"'token' is not {TOKEN_SIZE} bytes")
    return token


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
    return frame(dump(doc))


def decode_reply(doc: bytes) -> Reply:
    return reply_of(load(doc))


def reply_of(data: dict[str, Any]) -> Reply:
    ok = field(data, "ok", bool)
    error = None
    if not ok:
        err = field(data, "error", dict)
        error = Failure(error_kind(err.get("kind")), field(err, "message", str))
    return Reply(
        id=field(data, "id", int),
        ok=ok,
        result=data.get("result") if ok else None,
        printed=field(data, "printed", str),
        error=error,
        duration_ms=float(field(data, "duration_ms", int, float)),
        trace=marks(data.get("trace")),
    )
