"""The helper <-> child wire: one marshalled `Job` in, one framed JSON `Outcome` out."""

from __future__ import annotations

import marshal
from dataclasses import dataclass
from types import CodeType
from typing import Any

from forge.protocol.calls import Reply, Request
from forge.protocol.fields import ErrorKind, Failure, Marks, error_kind, field, load, marks
from forge.protocol.frames import ProtocolError
from forge.protocol.limits import Limits, decode_limits, encode_limits

JOB_VERSION = 5  # 4: limits carry the call's write budget; 5: the direct answer's token


@dataclass(frozen=True, slots=True)
class Job:
    """One call as a child receives it."""

    code: CodeType
    params: dict[str, Any]
    workspace: str
    secret_names: tuple[str, ...]  # handles only: the child never holds a vault value
    limits: Limits
    max_output: int
    trace: bool = False
    token: bytes = b""  # b"": answer through the helper (forge.protocol.answers)
    call_id: int = 0  # the request's id, which a direct answer names
    marks: Marks = ()  # a traced call's marks so far (the helper's), sent on with the child's


def encode_job(code: bytes, req: Request, workspace: str, marks: Marks = ()) -> bytes:
    """The bytes the helper hands a child: `code` is an already marshalled code object,
    `workspace` the request's workspace resolved by the helper, `marks` the helper's
    stage marks of a traced call."""
    lim = encode_limits(req.limits)
    fields = (JOB_VERSION, code, req.params, workspace, list(req.secret_names), lim, req.max_output)
    trace = [list(m) for m in marks] if req.trace else False
    return marshal.dumps((*fields, trace, req.token, req.id))


def decode_job(data: bytes) -> Job:
    try:
        version, code, params, workspace, names, lim, max_output, trace, token, call_id = (
            marshal.loads(data)
        )
    except (ValueError, EOFError, TypeError) as exc:
        raise ProtocolError(f"not a job: {exc}") from None
    if version != JOB_VERSION:
        raise ProtocolError(f"job format {version} is not {JOB_VERSION}")
    code_obj = marshal.loads(code)
    if not isinstance(code_obj, CodeType):
        raise ProtocolError("the job's code is not a code object")
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise ProtocolError("the job's secret names are not a list of strings")
    if not isinstance(token, bytes) or type(call_id) is not int:
        raise ProtocolError("the job's token or id has the wrong type")
    lim_ = decode_limits(lim)
    traced = trace is not False
    stages = marks(trace) if traced else ()
    return Job(
        code_obj, params, workspace, tuple(names), lim_, max_output, traced, token, call_id, stages
    )


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
    data = load(doc)
    trace = marks(data.get("trace"))
    if field(data, "ok", bool):
        printed = field(data, "printed", str)
        return Outcome(True, data.get("result"), printed, None, trace)
    failure = Failure(error_kind(data.get("kind")), field(data, "message", str))
    return Outcome(False, None, "", failure, trace)


def direct_reply(call_id: int, doc: bytes) -> Reply:
    """The runner's reply for a call whose child answered it directly with the outcome
    `doc` (forge.protocol.answers); a document that breaks the protocol is a failed
    call, as when the helper reads it (forge.replies)."""
    try:
        out = decode_outcome(doc)
    except ProtocolError:
        msg = "the tool exited without a valid result (an invalid direct answer)"
        return Reply(call_id, False, error=Failure("runtime", msg))
    return Reply(call_id, out.ok, out.result, out.printed, out.error, trace=out.trace)
