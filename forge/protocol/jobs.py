"""The helper <-> child wire: one marshalled `Job` in, one framed JSON `Outcome` out."""

from __future__ import annotations

import marshal
from dataclasses import dataclass
from types import CodeType
from typing import Any

from forge.protocol.calls import Request
from forge.protocol.fields import ErrorKind, Failure, Marks, error_kind, field, load, marks
from forge.protocol.frames import ProtocolError
from forge.protocol.limits import Limits, decode_limits, encode_limits

JOB_VERSION = 4  # 4: limits carry the call's write budget


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


def encode_job(code: bytes, req: Request, workspace: str) -> bytes:
    """The bytes the helper hands a child: `code` is an already marshalled code object,
    `workspace` the request's workspace resolved by the helper."""
    lim = encode_limits(req.limits)
    fields = (JOB_VERSION, code, req.params, workspace, list(req.secret_names), lim, req.max_output)
    return marshal.dumps((*fields, req.trace))


def decode_job(data: bytes) -> Job:
    try:
        version, code, params, workspace, names, lim, max_output, trace = marshal.loads(data)
    except (ValueError, EOFError, TypeError) as exc:
        raise ProtocolError(f"not a job: {exc}") from None
    if version != JOB_VERSION:
        raise ProtocolError(f"job format {version} is not {JOB_VERSION}")
    code_obj = marshal.loads(code)
    if not isinstance(code_obj, CodeType):
        raise ProtocolError("the job's code is not a code object")
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise ProtocolError("the job's secret names are not a list of strings")
    lim_ = decode_limits(lim)
    return Job(code_obj, params, workspace, tuple(names), lim_, max_output, bool(trace))


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
