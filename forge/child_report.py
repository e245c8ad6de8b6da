"""What a sandbox child reports about its one call: the error documents (with the
tool's own line number, never more of a traceback) and the result serialised
to JSON inside the child, capped, so only bytes leave (forge.child)."""

from __future__ import annotations

import json
import traceback
from typing import Any

from forge.protocol.fields import ErrorKind
from forge.protocol.frames import frame
from forge.protocol.jobs import failure_doc

MAX_MESSAGE = 2000
MEMORY_ERROR = json.dumps(failure_doc("memory", "the tool ran out of memory")).encode()
FRAMED_MEMORY_ERROR = frame(MEMORY_ERROR)


def tool_line(exc: BaseException) -> str:
    line = ""
    for tb_frame, lineno in traceback.walk_tb(exc.__traceback__):
        if tb_frame.f_code.co_filename == "<tool>":
            line = f" (line {lineno})"
    return line


def error(kind: ErrorKind, message: str) -> dict[str, Any]:
    return failure_doc(kind, message[:MAX_MESSAGE])


def describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable>"
    name = type(exc).__name__
    return f"{name}: {text[:MAX_MESSAGE]}{tool_line(exc)}" if text else name + tool_line(exc)


def serialise(payload: dict[str, Any], max_output: int) -> bytes:
    try:
        data = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except MemoryError:
        return MEMORY_ERROR
    except BaseException as exc:
        msg = (
            "the result is not JSON-serialisable; return only dict, list, str, int, "
            f"float, bool or None ({describe(exc)})"
        )
        data = json.dumps(error("output", msg)).encode()
    if len(data) > max_output:
        data = json.dumps(
            error("output", f"the result is {len(data)} bytes; the limit is {max_output}")
        ).encode()
    return data
