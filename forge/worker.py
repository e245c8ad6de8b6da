"""The sandbox helper process: small, pre-warmed, forks one child per call.

Started by `SandboxRunner` as `python -I` with an empty environment; it imports
only the standard library, RestrictedPython and forge. Protocol: JSON lines.
On start it writes `{"op": "hello", "pid": ..., "capabilities": {...}}`; then
for every request line `{"id", "source", "params", "workspace", "secrets",
"timeout_s", "max_output", "limits", "layers"}` it answers one line `{"id",
"ok", "result", "printed", "error": {"kind", "message"} | null, "duration_ms"}`.
Compiled code is cached by source hash; each call runs in a fresh fork that
never runs a second call; the wall-clock deadline is enforced here with SIGKILL.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import selectors
import signal
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from forge import confine
from forge.child import HelperContext, Job, Layers, child_main
from forge.modules import build_proxies
from forge.policy import CompileFailed, compile_tool, safe_builtins

CACHE_SIZE = 256
_PREWARM = (
    "_strptime",
    "encodings.latin_1",
    "encodings.ascii",
    "encodings.utf_16",
    "encodings.utf_8_sig",
    "encodings.cp1252",
    "unicodedata",
    "_json",
)


@dataclass
class _Pending:
    req_id: Any
    pid: int
    fd: int
    deadline: float
    started: float
    max_output: int
    buf: bytearray = field(default_factory=bytearray)
    killed: str = ""


def _reply(
    req_id: Any,
    started: float,
    *,
    ok: bool,
    result: Any = None,
    printed: str = "",
    kind: str = "",
    message: str = "",
) -> dict[str, Any]:
    return {
        "id": req_id,
        "ok": ok,
        "result": result if ok else None,
        "printed": printed,
        "error": None if ok else {"kind": kind, "message": message},
        "duration_ms": round((time.monotonic() - started) * 1000, 3),
    }


class Helper:
    def __init__(self) -> None:
        for name in _PREWARM:
            with contextlib.suppress(ImportError):
                __import__(name)
        caps = confine.probe()
        abi = confine.landlock_abi()
        program = confine.seccomp_program()
        self.caps = caps
        self.ctx = HelperContext(
            proxies=build_proxies(),
            devnull=os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC),
            read_fds=tuple(confine.open_roots(confine.read_only_roots())) if abi else (),
            landlock_abi=abi,
            seccomp=confine.SeccompFilter(program)
            if program is not None and caps["seccomp"]["available"]  # type: ignore[index]
            else None,
            builtins=safe_builtins(),
        )
        self.cache: OrderedDict[tuple[str, bool], CodeType] = OrderedDict()
        self.pending: dict[int, _Pending] = {}
        self.sel = selectors.DefaultSelector()
        self.inbuf = bytearray()
        self.exiting: dict[int, float] = {}

    def send(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj, ensure_ascii=False) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]

    def compile(self, source: str, restricted: bool) -> CodeType:
        key = (hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(), restricted)
        code = self.cache.get(key)
        if code is None:
            code = compile_tool(source, restricted)
            self.cache[key] = code
            if len(self.cache) > CACHE_SIZE:
                self.cache.popitem(last=False)
        else:
            self.cache.move_to_end(key)
        return code

    def start_job(self, req: dict[str, Any]) -> None:
        started = time.monotonic()
        req_id = req.get("id")
        try:
            layers = Layers(**req.get("layers", {}))
            code = self.compile(req["source"], layers.restricted)
            workspace = os.path.realpath(req["workspace"])
            if not os.path.isdir(workspace):
                raise FileNotFoundError(f"workspace {req['workspace']!r} is not a directory")
            params = req.get("params") or {}
            if not isinstance(params, dict):
                raise TypeError("params must be a JSON object")
            timeout = float(req.get("timeout_s", 5.0))
            limits = confine.Limits(**{**req.get("limits", {}), "cpu_s": int(timeout) + 1})
            job = Job(
                code,
                params,
                workspace,
                dict(req.get("secrets") or {}),
                limits,
                layers,
                int(req.get("max_output", 1 << 20)),
            )
        except CompileFailed as exc:
            self.send(_reply(req_id, started, ok=False, kind="compile", message=str(exc)))
            return
        except (KeyError, TypeError, ValueError, OSError) as exc:
            self.send(
                _reply(req_id, started, ok=False, kind="runtime", message=f"bad request: {exc}")
            )
            return
        r, w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            os.close(r)
            child_main(job, self.ctx, w)
        os.close(w)
        os.set_blocking(r, False)
        self.pending[r] = _Pending(req_id, pid, r, started + timeout, started, job.max_output)
        self.sel.register(r, selectors.EVENT_READ, "child")

    def child_readable(self, fd: int) -> None:
        p = self.pending[fd]
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if chunk:
            p.buf += chunk
            if len(p.buf) > p.max_output + 4096 and not p.killed:
                p.killed = "output"
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGKILL)
            return
        self.finish(p)

    def finish(self, p: _Pending) -> None:
        self.sel.unregister(p.fd)
        os.close(p.fd)
        del self.pending[p.fd]
        pid, status = os.waitpid(p.pid, os.WNOHANG)
        if pid == 0 and p.buf and not p.killed:
            # The child closed its pipe after writing; reply now, reap it shortly.
            self.exiting[p.pid] = time.monotonic() + 1.0
            self.send(self.outcome(p, 0))
            return
        if pid == 0:
            _, status = os.waitpid(p.pid, 0)
        self.send(self.outcome(p, status))

    def reap(self) -> None:
        now = time.monotonic()
        for pid, deadline in list(self.exiting.items()):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                del self.exiting[pid]
            elif now > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def outcome(self, p: _Pending, status: int) -> dict[str, Any]:
        if p.killed == "timeout":
            return _reply(
                p.req_id,
                p.started,
                ok=False,
                kind="timeout",
                message=f"the tool ran longer than {p.deadline - p.started:g} s and was killed",
            )
        if p.killed == "output":
            return _reply(
                p.req_id,
                p.started,
                ok=False,
                kind="output",
                message=f"the tool produced more than {p.max_output} bytes",
            )
        if os.WIFSIGNALED(status) and not p.buf:
            sig = os.WTERMSIG(status)
            if sig in (signal.SIGXCPU, signal.SIGKILL):
                return _reply(
                    p.req_id,
                    p.started,
                    ok=False,
                    kind="timeout",
                    message="the tool used up its CPU time and was killed",
                )
            return _reply(
                p.req_id,
                p.started,
                ok=False,
                kind="runtime",
                message=f"the tool crashed ({signal.Signals(sig).name})",
            )
        try:
            data = json.loads(p.buf)
        except (ValueError, MemoryError):
            code = os.waitstatus_to_exitcode(status)
            kind = "memory" if code == 3 else "runtime"
            return _reply(
                p.req_id,
                p.started,
                ok=False,
                kind=kind,
                message=f"the tool exited without a valid result (status {code})",
            )
        if data.get("ok"):
            return _reply(
                p.req_id,
                p.started,
                ok=True,
                result=data.get("result"),
                printed=data.get("printed", ""),
            )
        return _reply(
            p.req_id,
            p.started,
            ok=False,
            kind=data.get("kind", "runtime"),
            message=data.get("message", ""),
        )

    def stdin_readable(self) -> bool:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return False
        self.inbuf += chunk
        while (nl := self.inbuf.find(b"\n")) >= 0:
            line = bytes(self.inbuf[:nl])
            del self.inbuf[: nl + 1]
            if line.strip():
                try:
                    req = json.loads(line)
                except ValueError:
                    continue
                self.start_job(req)
        return True

    def expire(self) -> float | None:
        now = time.monotonic()
        wait: float | None = None
        for p in self.pending.values():
            if p.killed:
                continue
            if now >= p.deadline:
                p.killed = "timeout"
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGKILL)
            else:
                left = p.deadline - now
                wait = left if wait is None else min(wait, left)
        return wait

    def serve(self) -> None:
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, "stdin")
        self.send({"op": "hello", "pid": os.getpid(), "capabilities": self.caps})
        gc.collect()
        gc.freeze()
        open_stdin = True
        while open_stdin or self.pending or self.exiting:
            timeout = self.expire()
            if self.exiting:
                self.reap()
                timeout = 0.01 if timeout is None else min(timeout, 0.01)
            for key, _ in self.sel.select(timeout):
                if key.data == "stdin":
                    if not self.stdin_readable():
                        open_stdin = False
                        self.sel.unregister(0)
                        for p in self.pending.values():
                            p.killed = p.killed or "timeout"
                            with contextlib.suppress(ProcessLookupError):
                                os.kill(p.pid, signal.SIGKILL)
                else:
                    self.child_readable(key.fd)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(BrokenPipeError):
        Helper().serve()
    sys.exit(0)


if __name__ == "__main__":
    main()
