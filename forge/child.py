"""What runs inside one forked sandbox child: confine, run the tool, report JSON bytes.

The child never returns: it writes one JSON document to its result pipe and
calls os._exit. The result is serialised here, inside the child, so objects a
tool returns (custom __eq__, __repr__, endless iterators) never run code in the
helper or the daemon; only bytes leave.
"""

from __future__ import annotations

import builtins
import json
import os
import traceback
from dataclasses import dataclass
from types import CodeType, SimpleNamespace
from typing import Any

from forge import confine
from forge.pathgate import PathDenied, PathGate
from forge.policy import OutputTooLarge, PrintSink, make_globals, make_unrestricted_globals

MAX_MESSAGE = 2000
_MEMORY_ERROR = b'{"ok":false,"kind":"memory","message":"the tool ran out of memory"}'


@dataclass(frozen=True, slots=True)
class Layers:
    """Which layers run. The daemon always uses all; tests switch one off at a time
    to show that the next one still holds."""

    restricted: bool = True
    gate: bool = True
    landlock: bool = True
    seccomp: bool = True
    rlimits: bool = True
    drop_caps: bool = True


@dataclass(frozen=True, slots=True)
class HelperContext:
    """Prepared once in the helper, inherited by every child."""

    proxies: dict[str, SimpleNamespace]
    devnull: int
    read_fds: tuple[int, ...]
    landlock_abi: int
    seccomp: confine.SeccompFilter | None
    builtins: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Job:
    code: CodeType
    params: dict[str, Any]
    workspace: str
    secrets: dict[str, str]
    limits: confine.Limits
    layers: Layers
    max_output: int


def _close_other_fds(keep: set[int]) -> None:
    low = 0
    for fd in sorted(keep):
        if fd > low:
            confine.close_range(low, fd - 1)
        low = fd + 1
    confine.close_range(low, 0xFFFFFFFF)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _tool_line(exc: BaseException) -> str:
    line = ""
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == "<tool>":
            line = f" (line {lineno})"
    return line


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "message": message[:MAX_MESSAGE]}


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable>"
    name = type(exc).__name__
    return f"{name}: {text[:MAX_MESSAGE]}{_tool_line(exc)}" if text else name + _tool_line(exc)


def _confine(job: Job, ctx: HelperContext, result_fd: int) -> int:
    for std in (0, 1, 2):
        os.dup2(ctx.devnull, std)
    ws_fd = os.open(job.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    if job.layers.landlock and ctx.landlock_abi:
        confine.apply_landlock(ctx.landlock_abi, ws_fd, ctx.read_fds)
    os.fchdir(ws_fd)
    _close_other_fds({0, 1, 2, result_fd, ws_fd})
    os.environ.clear()
    if job.layers.rlimits:
        confine.apply_rlimits(job.limits)
    if job.layers.drop_caps and os.geteuid() == 0:
        confine.drop_capabilities()
    if job.layers.seccomp and ctx.seccomp is not None:
        ctx.seccomp.install()
    return ws_fd


def _run_tool(job: Job, ctx: HelperContext, ws_fd: int) -> dict[str, Any]:
    sink = PrintSink(job.max_output)
    gate = PathGate(job.workspace, dir_fd=ws_fd, resolved=True)
    if not job.layers.restricted:
        glb = make_unrestricted_globals()
    else:
        opener = gate.open if job.layers.gate else builtins.open
        glb = make_globals(ctx.builtins, ctx.proxies, opener, gate.listdir, job.secrets, sink)
    try:
        exec(job.code, glb)
        run = glb.get("run")
        if not callable(run):
            return _error("runtime", "the tool defines no run() function")
        result = run(**job.params)
    except PathDenied as exc:
        return _error("denied", f"{exc}{_tool_line(exc)}")
    except OutputTooLarge as exc:
        return _error("output", str(exc))
    except MemoryError:
        glb.clear()
        return _error("memory", "the tool ran out of memory")
    except BaseException as exc:
        return _error("runtime", _describe(exc))
    return {"ok": True, "result": result, "printed": sink.text()}


def _serialise(payload: dict[str, Any], max_output: int) -> bytes:
    try:
        data = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except MemoryError:
        return _MEMORY_ERROR
    except BaseException as exc:
        msg = (
            "the result is not JSON-serialisable; return only dict, list, str, int, "
            f"float, bool or None ({_describe(exc)})"
        )
        data = json.dumps(_error("output", msg)).encode()
    if len(data) > max_output:
        data = json.dumps(
            _error("output", f"the result is {len(data)} bytes; the limit is {max_output}")
        ).encode()
    return data


def child_main(job: Job, ctx: HelperContext, result_fd: int) -> None:
    """Entry point after fork; never returns."""
    try:
        try:
            ws_fd = _confine(job, ctx, result_fd)
        except BaseException as exc:
            data = json.dumps(_error("runtime", f"sandbox setup failed: {exc}")).encode()
        else:
            data = _serialise(_run_tool(job, ctx, ws_fd), job.max_output)
        _write_all(result_fd, data)
        os.close(result_fd)  # EOF now: the helper replies before this process is torn down
    except MemoryError:
        try:
            _write_all(result_fd, _MEMORY_ERROR)
        except BaseException:
            os._exit(3)
    except BaseException:
        os._exit(4)
    os._exit(0)
