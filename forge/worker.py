"""The sandbox helper process: small, pre-warmed, forks one child per call.

Started by `SandboxRunner` as `python -I` with an empty environment; it imports
only the standard library, RestrictedPython and forge. Its command line carries
the layer switches of the layer tests (`{}` in production: every layer on); a
request cannot change them. Protocol (forge.protocol): length-prefixed frames;
on start it writes a `Hello`, then answers every `Request` with one `Reply`.

Children are never forked from this process: right after preparing what is
the same for every call, and before reading its first request, it forks a
zygote (forge.zygote), and every child is forked from that pristine process, so
a child holds only the one call written into it after the fork. Compiled code is
cached (marshalled) by source hash here, in the helper; the runner gives each
workspace (one tenant's) its own helper, so the cache holds one tenant's tools
and a child receives only its own call's code. Children are forked ahead
of demand: up to `IDLE_CHILDREN` wait, already half-prepared (see forge.child),
while the helper has no call in flight (forking stalls the helper and competes
for the CPU, so it never runs while a reply may be due); a call goes to one of them (or to a
child forked on the spot when none waits) and that child exits after it. The
reply goes out as soon as the child's result frame is complete; the child is
reaped afterwards. The wall-clock deadline is enforced here with SIGKILL.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import marshal
import os
import selectors
import signal
import sys
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace
from typing import Any

from forge.child import HelperContext, Layers
from forge.confine.landlock import landlock_abi, open_roots, read_only_roots
from forge.confine.probe import probe
from forge.confine.seccomp import SeccompFilter, seccomp_program
from forge.modules import build_proxies
from forge.policy.compile import CompileFailed, compile_tool
from forge.policy.globals import safe_builtins
from forge.protocol import (
    MAX_REQUEST,
    ErrorKind,
    Failure,
    FrameReader,
    Hello,
    ProtocolError,
    Reply,
    Request,
    decode_outcome,
    decode_request,
    encode_hello,
    encode_job,
    encode_reply,
    unframe,
)
from forge.zygote import Spawned, Zygote, kill

CACHE_SIZE = 256
IDLE_CHILDREN = 2  # children forked ahead of demand (two concurrent callers on 2 cores)
SPAWN_BACKOFF_S = 0.5
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
    req_id: int
    pid: int
    pidfd: int
    fd: int
    deadline: float
    started: float
    max_output: int
    buf: bytearray = field(default_factory=bytearray)
    killed: str = ""
    trace: list[tuple[str, int]] | None = None


def _reply(
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


def _mark(trace: list[tuple[str, int]] | None, name: str) -> None:
    if trace is not None:
        trace.append((name, time.perf_counter_ns()))


def prepare(layers: Layers | None = None) -> tuple[HelperContext, dict[str, Any]]:
    """What every call shares, prepared before any request exists: warm imports,
    module proxies, the seccomp program, the read-only roots; and the machine's
    capabilities."""
    for name in _PREWARM:
        with contextlib.suppress(ImportError):
            __import__(name)
    caps = probe()
    abi = landlock_abi()
    program = seccomp_program()
    ctx = HelperContext(
        proxies=build_proxies(),
        devnull=os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC),
        read_fds=tuple(open_roots(read_only_roots())) if abi else (),
        landlock_abi=abi,
        seccomp=SeccompFilter(program)
        if program is not None and caps["seccomp"]["available"]  # type: ignore[index]
        else None,
        builtins=safe_builtins(),
        layers=layers or Layers(),
        helper_pid=os.getpid(),
    )
    return ctx, caps


class Helper:
    def __init__(self, ctx: HelperContext, caps: dict[str, Any], zygote: Zygote) -> None:
        self.caps = caps
        self.ctx = ctx
        self.zygote = zygote
        self.cache: OrderedDict[str, bytes] = OrderedDict()
        self.pending: dict[int, _Pending] = {}
        self.awaiting: dict[int, _Pending] = {}  # EOF seen, exit status not yet
        self.statuses: dict[int, int] = {}  # exit status seen, EOF not yet
        self.idle: deque[Spawned] = deque()
        self.spawn_after = 0.0
        self.sel = selectors.DefaultSelector()
        self.requests = FrameReader(MAX_REQUEST)
        self.exiting: dict[int, tuple[float, int]] = {}  # pid -> (kill after, pidfd)

    def send(self, reply: Reply) -> None:
        self.write(encode_reply(reply))

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]

    def compile(self, source: str) -> bytes:
        """The marshalled code object of `source`, compiled once per source text."""
        key = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
        code = self.cache.get(key)
        if code is None:
            code = marshal.dumps(compile_tool(source, self.ctx.layers.restricted))
            self.cache[key] = code
            if len(self.cache) > CACHE_SIZE:
                self.cache.popitem(last=False)
        else:
            self.cache.move_to_end(key)
        return code

    def spawn(self) -> Spawned:
        """A new child from the zygote that prepares itself and waits for one call."""
        try:
            return self.zygote.fork_child()
        except ConnectionError:
            raise SystemExit(1) from None  # no zygote, no children: the runner restarts us

    def discard(self, child: Spawned) -> None:
        kill(child.pidfd)
        for fd in (child.go, child.job, child.result, child.pidfd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def refill_now(self) -> bool:
        """Fork the next waiting child only while no call is in flight (forking stalls
        this process for a while and competes with the calls' children for the CPU),
        unless no child waits at all."""
        return not self.pending or not self.idle

    def refill(self) -> None:
        """Fork one more waiting child; on failure back off for SPAWN_BACKOFF_S."""
        try:
            self.idle.append(self.spawn())
        except OSError:
            self.spawn_after = time.monotonic() + SPAWN_BACKOFF_S

    def hand_over(self, data: bytes) -> Spawned:
        """Give one call to a waiting child (forking one if none waits); that child's
        go pipe and memfd are closed here, so it can never be given another."""
        for _ in range(3):
            child = self.idle.popleft() if self.idle else self.spawn()
            try:
                view = memoryview(data)
                offset = 0
                while offset < len(view):
                    offset += os.pwrite(child.job, view[offset:], offset)
                os.write(child.go, b"g")
            except OSError:  # it died while waiting (OOM killer, signal): use another
                self.discard(child)
                continue
            os.close(child.go)
            os.close(child.job)
            return child
        raise OSError("no sandbox child could be started")

    def start_job(self, req: Request) -> None:
        started = time.monotonic()
        req_id = req.id
        trace: list[tuple[str, int]] | None = [] if req.trace else None
        _mark(trace, "helper_recv")
        try:
            code = self.compile(req.source)
            workspace = os.path.realpath(req.workspace)
            if not os.path.isdir(workspace):
                raise FileNotFoundError(f"workspace {req.workspace!r} is not a directory")
            data = encode_job(code, req, workspace)
        except CompileFailed as exc:
            self.send(_reply(req_id, started, ok=False, kind="compile", message=str(exc)))
            return
        except (TypeError, ValueError, OSError) as exc:
            self.send(
                _reply(req_id, started, ok=False, kind="runtime", message=f"bad request: {exc}")
            )
            return
        _mark(trace, "helper_ready")
        try:
            child = self.hand_over(data)
        except OSError as exc:
            msg = f"could not start a sandbox process: {exc}"
            self.send(_reply(req_id, started, ok=False, kind="runtime", message=msg))
            return
        _mark(trace, "helper_sent")
        r = child.result
        os.set_blocking(r, False)
        self.pending[r] = _Pending(
            req_id,
            child.pid,
            child.pidfd,
            r,
            started + req.timeout_s,
            started,
            req.max_output,
            trace=trace,
        )
        self.sel.register(r, selectors.EVENT_READ, "child")

    def child_readable(self, fd: int) -> None:
        p = self.pending[fd]
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            self.finish(p, None)
            return
        p.buf += chunk
        if p.killed:
            return
        if len(p.buf) > p.max_output + 4096:
            p.killed = "output"
            kill(p.pidfd)
            return
        doc = unframe(p.buf)
        if doc is not None:
            self.finish(p, doc)

    def finish(self, p: _Pending, doc: bytes | None) -> None:
        """Reply for `p`: at once when its result frame is complete (`doc`; the child
        is reaped later, off the call's path), else at EOF after reaping it."""
        _mark(p.trace, "helper_result" if doc is not None else "helper_eof")
        self.sel.unregister(p.fd)
        os.close(p.fd)
        del self.pending[p.fd]
        if doc is not None:
            self.send(self.traced(p, self.outcome(p, 0, doc)))
            if self.statuses.pop(p.pid, None) is None:
                self.exiting[p.pid] = (time.monotonic() + 1.0, p.pidfd)
            else:
                os.close(p.pidfd)
            return
        status = self.statuses.pop(p.pid, None)
        if status is None:  # the zygote reports the exit status: reply then
            self.awaiting[p.pid] = p
            return
        self.send_outcome(p, status)

    def send_outcome(self, p: _Pending, status: int) -> None:
        os.close(p.pidfd)
        self.send(self.traced(p, self.outcome(p, status, unframe(p.buf))))

    def exited(self, pid: int, status: int) -> None:
        """The zygote reaped `pid`."""
        if (p := self.awaiting.pop(pid, None)) is not None:
            self.send_outcome(p, status)
        elif (gone := self.exiting.pop(pid, None)) is not None:
            os.close(gone[1])
        elif any(p.pid == pid for p in self.pending.values()):
            self.statuses[pid] = status  # its pipe's EOF comes next

    @staticmethod
    def traced(p: _Pending, reply: Reply) -> Reply:
        if p.trace is not None:
            _mark(p.trace, "helper_reply")
            return replace(reply, trace=tuple(p.trace))
        return reply

    def reap(self) -> None:
        """Children that sent their result but linger past a second are killed."""
        now = time.monotonic()
        for deadline, pidfd in self.exiting.values():
            if now > deadline:
                kill(pidfd)

    def outcome(self, p: _Pending, status: int, doc: bytes | None) -> Reply:
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
        if os.WIFSIGNALED(status) and doc is None:
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
            if doc is None:
                raise ProtocolError("no result frame")
            out = decode_outcome(doc)
        except (ProtocolError, MemoryError):
            code = os.waitstatus_to_exitcode(status)
            kind: ErrorKind = "memory" if code == 3 else "runtime"
            return _reply(
                p.req_id,
                p.started,
                ok=False,
                kind=kind,
                message=f"the tool exited without a valid result (status {code})",
            )
        if p.trace is not None:
            p.trace.extend(out.trace)
        if out.error is None:
            return _reply(p.req_id, p.started, ok=True, result=out.result, printed=out.printed)
        return _reply(p.req_id, p.started, ok=False, kind=out.error.kind, message=out.error.message)

    def stdin_readable(self) -> bool:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return False
        for doc in self.requests.feed(chunk):  # FrameTooLarge: exit, the runner restarts us
            try:
                req = decode_request(doc)
            except ProtocolError as exc:
                self.refuse(doc, exc)
                continue
            self.start_job(req)
        return True

    def refuse(self, doc: bytes, exc: ProtocolError) -> None:
        """Answer a malformed request if it carries an id (else nobody waits for it)."""
        try:
            req_id = json.loads(doc).get("id")
        except (ValueError, AttributeError, RecursionError):
            return
        if type(req_id) is int:
            msg = f"bad request: {exc}"
            self.send(_reply(req_id, time.monotonic(), ok=False, kind="runtime", message=msg))

    def expire(self) -> float | None:
        now = time.monotonic()
        wait: float | None = None
        for p in self.pending.values():
            if p.killed:
                continue
            if now >= p.deadline:
                p.killed = "timeout"
                kill(p.pidfd)
            else:
                left = p.deadline - now
                wait = left if wait is None else min(wait, left)
        return wait

    def serve(self) -> None:
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, "stdin")
        self.sel.register(self.zygote.sock, selectors.EVENT_READ, "zygote")
        self.write(encode_hello(Hello(os.getpid(), self.zygote.pid, self.caps)))
        gc.collect()
        gc.freeze()
        open_stdin = True
        while open_stdin or self.pending or self.exiting or self.awaiting:
            timeout = self.expire()
            if self.exiting:
                self.reap()
                timeout = 0.01 if timeout is None else min(timeout, 0.01)
            want_child = open_stdin and len(self.idle) < IDLE_CHILDREN and self.refill_now()
            if want_child:
                wait = self.spawn_after - time.monotonic()
                if wait > 0:  # forking failed recently: try again later
                    want_child = False
                    timeout = wait if timeout is None else min(timeout, wait)
            events = self.sel.select(0 if want_child else timeout)
            for key, _ in events:
                if key.data == "stdin":
                    if not self.stdin_readable():
                        open_stdin = False
                        self.sel.unregister(0)
                        for p in self.pending.values():
                            p.killed = p.killed or "timeout"
                            kill(p.pidfd)
                elif key.data == "zygote":
                    if not self.zygote.read_reports():
                        raise SystemExit(1)  # no zygote: the runner restarts this helper
                elif key.fd in self.pending:
                    self.child_readable(key.fd)
            while self.zygote.exits:
                self.exited(*self.zygote.exits.pop(0))
            if not events and want_child:
                self.refill()  # nothing to answer: fork the next child now, off the calls' path


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    layers = Layers(**json.loads(sys.argv[2])) if len(sys.argv) > 2 else Layers()
    ctx, caps = prepare(layers)
    zygote = Zygote.start(ctx)  # before the first request is read
    helper = Helper(ctx, caps, zygote)
    try:
        with contextlib.suppress(BrokenPipeError):
            helper.serve()
    finally:
        while helper.idle:
            helper.discard(helper.idle.popleft())
        zygote.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
