"""How the helper answers one call: the pure part of forge.worker.

An `InFlight` is what the helper knows of one call handed to a child (its id,
deadline, output cap, the bytes received so far, why it was killed if it was);
a `Waiting` is a call no child has taken yet (`unserved`: its reply if none does).
`outcome` turns that, the child's exit status and its result frame (if complete)
into the `Reply` the runner receives: a kill for time or output, a death by
signal, a missing or invalid frame, or the child's own outcome. No I/O, no fork:
tests/forge/test_replies.py exercises every branch without a process.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field, replace
from typing import Any

from forge.protocol.calls import Reply
from forge.protocol.fields import ErrorKind, Failure
from forge.protocol.frames import FrameReader, ProtocolError
from forge.protocol.jobs import decode_outcome

Trace = list[tuple[str, int]]


@dataclass
class InFlight:
    """One call a child is running, as the helper tracks it."""

    req_id: int
    pid: int
    pidfd: int
    fd: int
    deadline: float
    started: float
    max_output: int
    go: int = -1  # write end of the child's go pipe: the broker's answers to it
    buf: bytearray = field(default_factory=bytearray)
    killed: str = ""  # "", "timeout" or "output"
    trace: Trace | None = None
    frames: FrameReader | None = None  # frames on the child's result pipe
    outbox: bytearray = field(default_factory=bytearray)  # answers not yet written
    asks: int = 0  # `net` requests forwarded


@dataclass
class Waiting:
    """A call no child has taken yet: none waited when it came (forge.worker)."""

    req_id: int
    job: bytes  # what the child it goes to receives
    started: float
    deadline: float
    max_output: int
    trace: Trace | None = None


def unserved(w: Waiting, kind: ErrorKind, message: str) -> Reply:
    """The reply for `w` when no child ever took it."""
    if w.trace is not None:
        mark(w.trace, "helper_reply")
        return replace(failed(w.req_id, w.started, kind, message), trace=tuple(w.trace))
    return failed(w.req_id, w.started, kind, message)


def mark(trace: Trace | None, name: str) -> None:
    if trace is not None:
        trace.append((name, time.perf_counter_ns()))


def reply(
    req_id: int,
    started: float,
    *,
    ok: bool,
    result: Any = None,
    printed: str = "",
    kind: ErrorKind = "runtime",
    message: str = "",
) -> Reply:
    return Reply(
        id=req_id,
        ok=ok,
        result=result if ok else None,
        printed=printed,
        error=None if ok else Failure(kind, message),
        duration_ms=round((time.monotonic() - started) * 1000, 3),
    )


def failed(req_id: int, started: float, kind: ErrorKind, message: str) -> Reply:
    return reply(req_id, started, ok=False, kind=kind, message=message)


def traced(p: InFlight, answer: Reply) -> Reply:
    """`answer` with the call's trace marks, when it is traced."""
    if p.trace is not None:
        mark(p.trace, "helper_reply")
        return replace(answer, trace=tuple(p.trace))
    return answer


def outcome(p: InFlight, status: int, doc: bytes | None) -> Reply:
    """The reply for `p`, whose child exited with `status` (0 when not yet reaped)
    having sent the result document `doc` (None: no complete frame)."""
    if p.killed:
        return _killed(p)
    if os.WIFSIGNALED(status) and doc is None:
        return _signalled(p, os.WTERMSIG(status))
    try:
        if doc is None:
            raise ProtocolError("no result frame")
        out = decode_outcome(doc)
    except (ProtocolError, MemoryError):
        code = os.waitstatus_to_exitcode(status)
        kind: ErrorKind = "memory" if code == 3 else "runtime"
        return failed(
            p.req_id, p.started, kind, f"the tool exited without a valid result (status {code})"
        )
    if p.trace is not None:
        p.trace.extend(out.trace)
    if out.error is None:
        return reply(p.req_id, p.started, ok=True, result=out.result, printed=out.printed)
    return failed(p.req_id, p.started, out.error.kind, out.error.message)


def _killed(p: InFlight) -> Reply:
    if p.killed == "timeout":
        limit = p.deadline - p.started
        return failed(
            p.req_id, p.started, "timeout", f"the tool ran longer than {limit:g} s and was killed"
        )
    msg = f"the tool produced more than {p.max_output} bytes"
    return failed(p.req_id, p.started, "output", msg)


def _signalled(p: InFlight, sig: int) -> Reply:
    if sig in (signal.SIGXCPU, signal.SIGKILL):
        msg = "the tool used up its CPU time and was killed"
        return failed(p.req_id, p.started, "timeout", msg)
    msg = f"the tool crashed ({signal.Signals(sig).name})"
    return failed(p.req_id, p.started, "runtime", msg)
