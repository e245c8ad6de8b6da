"""The sandbox helper process: small, pre-warmed, forks one child per call.

Started by `SandboxRunner` as `python -I -S` (no `site`: no .pth file runs
here) with an empty environment; it imports only the standard library,
RestrictedPython and forge. Its command line carries
the layer switches of the layer tests (`{}` in production: every layer on); a
request cannot change them. Protocol (forge.protocol): length-prefixed frames;
on start it writes a `Hello`, then answers every `Request` with one `Reply`.

Children are never forked from this process: right after preparing what is
the same for every call (forge.warmup), and before reading its first request,
it forks a zygote (forge.zygote), and every child is forked from that pristine
process, so a child holds only the one call written into it after the fork.
Compiled code is cached (forge.code_cache) here, in the helper; the runner gives
each workspace (one tenant's) its own helper, so the cache holds one tenant's
tools and a child receives only its own call's code. Children are forked ahead
of demand (forge.child_pool); a call goes to one of them and that child exits
after it. A call that finds none waiting waits here for the next to arrive: the
helper never blocks on its zygote. When the zygote has owed an answer (a child
asked for, an exit status) for ZYGOTE_WAIT_S without a word while calls wait on
it (for a child, or for the exit status of a child that died without a result),
it is stopped or stuck: the helper tells the runner so (`RETIRE`: the next call
starts a new helper with a new zygote, and the runner runs the calls no child
took there again), fails those whose child's exit status never came, and exits. Most
children answer the runner themselves (forge.protocol.answers) and only tell
the helper so with a marker frame; for the others the reply (forge.replies) goes
out as soon as the child's result frame is complete. The child is reaped
afterwards (a call killed here is answered without waiting for that). The
wall-clock deadline is enforced here with SIGKILL. A child's `net` requests are
relayed to the runner's broker and its answers back into the child
(forge.relay); the deadline covers them.

With a lending socket (`lend=FD`, forge.protocol.lending) the helper lends the
runner its waiting children confined to its workspace; the runner writes a call
into one of them itself and tells the helper (`handed`): from then on the helper
watches that child exactly as one it handed a call itself (the deadline counted
from the moment the runner handed it, the output cap, the `net` relay, the exit
status). Each call's code is compiled here and sent to the runner once
(`code` message), the only code the runner writes into this helper's children.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import selectors
import signal
import socket
import stat
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, NamedTuple, NoReturn

from forge import relay
from forge.child import HelperContext
from forge.child_pool import IDLE_CHILDREN, ChildPool
from forge.code_cache import CodeCache
from forge.confine.sched import CALL_SLICE_NS, set_slice
from forge.layers import Layers
from forge.policy.compile import CompileFailed
from forge.protocol.answers import DIRECT_DONE_DOC
from forge.protocol.calls import (
    MAX_REQUEST,
    Hello,
    Reply,
    Request,
    encode_hello,
    encode_reply,
    request_of,
    retire_frame,
)
from forge.protocol.fields import field, load
from forge.protocol.frames import FrameReader, FrameTooLarge, ProtocolError
from forge.protocol.jobs import encode_job
from forge.protocol.lending import DROP_OP, HANDED_OP, MESSAGE_MAX, encode_code, encode_gone
from forge.protocol.net import MAX_NET_REQUEST, decode_answer, encode_ask
from forge.rehearsal import rehearse_calls
from forge.replies import InFlight, Waiting, failed, mark, outcome, traced, unserved
from forge.warmup import prepare, protect_library
from forge.zygote import Spawned, Zygote, kill

LINGER_S = 1.0  # a child that sent its result is killed if still alive after this
# a zygote that owed an answer (a child, an exit status) this long without a word, while
# calls wait on it, is stopped or stuck: the helper retires (forking and reaping take
# milliseconds even under load)
ZYGOTE_WAIT_S = 3.0
# bytes of the runner's frames read at a time: a buffer below glibc's mmap threshold
# (128 KiB), so a read allocates from the heap; 1 MiB was an mmap, an mremap as the
# bytes shrank to the frame and an munmap, each call (a longer frame takes more reads)
STDIN_READ = 1 << 16
# a call no child took before its deadline: its tool never ran (not a slow tool)
NOT_STARTED = (
    "the tool did not start: the sandbox had no free process for it within the "
    "call's {limit:g} s (nothing of it ran; try again)"
)


@dataclass
class Lingering:
    """A child that sent its result and whose exit status has not come yet."""

    kill_after: float  # monotonic time past which it is killed (LINGER_S)
    pidfd: int
    killed: bool = False  # killed already: once is enough (a stopped zygote reports it never)


class Helper:
    def __init__(
        self,
        ctx: HelperContext,
        caps: dict[str, Any],
        zygote: Zygote,
        call_slice_ns: int | None = CALL_SLICE_NS,
        depth: int = IDLE_CHILDREN,
        lend: socket.socket | None = None,
        zygote_wait_s: float = ZYGOTE_WAIT_S,
    ) -> None:
        self.caps = caps
        self.zygote_wait_s = zygote_wait_s  # silent this long while calls wait: retire
        self.lend = lend  # the lending socket (None: no child is lent to the runner)
        self.ctx = ctx
        self.zygote = zygote
        self.codes = CodeCache(ctx.layers.restricted)
        self.children = ChildPool(zygote, call_slice_ns, depth)
        self.pending: dict[int, InFlight] = {}  # result fd -> its call
        self.answering: dict[int, InFlight] = {}  # go fd with answers waiting -> its call
        self.waiting: deque[Waiting] = deque()  # calls no child has taken yet
        self.owed_since: float | None = None  # the zygote owes an answer, silent, since
        self.awaiting: dict[int, InFlight] = {}  # EOF seen, exit status not yet
        self.statuses: dict[int, int] = {}  # exit status seen, EOF not yet
        self.exiting: dict[int, Lingering] = {}  # pid -> the child that sent its result
        self.sel = selectors.DefaultSelector()
        self.requests = FrameReader(MAX_REQUEST)
        self.open_stdin = True

    def send(self, reply: Reply) -> None:
        self.write(encode_reply(reply))

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]

    def job_data(
        self, req: Request, trace: list[tuple[str, int]] | None = None, send_code: bool = False
    ) -> bytes:
        """The job a child receives for `req` (raises CompileFailed, OSError, ...); a
        traced call's job carries the helper's marks (the child sends them on, so
        they reach the runner when the child answers it directly). `send_code`: the
        runner lacks this source's code: it goes on the lending socket."""
        code = self.codes.compile(req.source)
        if send_code:
            self.send_code(req.source, code)
        self.children.hint.note(code)  # whether the next children warm the reading path
        workspace = os.path.realpath(req.workspace)
        try:
            st: os.stat_result | None = os.stat(workspace)
        except OSError:  # missing, a file on the way, no access: as `isdir` said before
            st = None
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise FileNotFoundError(f"workspace {req.workspace!r} is not a directory")
        self.children.bind(workspace, st.st_dev, st.st_ino)
        if not self.children.idle:  # the call waits for a fork (bench.sandbox --callers)
            mark(trace, "helper_none_waiting")
        mark(trace, "helper_ready")
        return encode_job(code, req, workspace, tuple(trace or ()))

    def send_code(self, source: str, code: bytes) -> None:
        """Send the runner `source`'s code (never blocks; one it cannot take now is
        sent again with the next call of that source through this helper)."""
        if self.lend is None or len(code) + 64 > MESSAGE_MAX:
            return
        with contextlib.suppress(OSError):
            self.lend.send(encode_code(self.codes.digest(source), code), socket.MSG_DONTWAIT)

    def start_job(self, req: Request, send_code: bool = False) -> None:
        started = time.monotonic()
        trace: list[tuple[str, int]] | None = [] if req.trace else None
        mark(trace, "helper_recv")
        try:
            data = self.job_data(req, trace, send_code)
        except CompileFailed as exc:
            self.send(failed(req.id, started, "compile", str(exc)))
            return
        except (TypeError, ValueError, OSError) as exc:
            self.send(failed(req.id, started, "runtime", f"bad request: {exc}"))
            return
        call = Waiting(req.id, data, started, started + req.timeout_s, req.max_output, trace)
        if self.waiting or not self.give(call):  # no child waits: the next one takes it
            self.waiting.append(call)

    def give(self, call: Waiting) -> bool:
        """Hand `call` to a waiting child and watch it; False when none waits."""
        child = self.children.hand_over(call.job)
        if child is None:
            return False
        mark(call.trace, "helper_sent")
        self.follow(child, call)
        return True

    def handed(self, data: dict[str, Any]) -> None:
        """The runner wrote a call into a child lent to it (forge.protocol.lending
        `handed_frame`): watch that child as one handed a call here. The deadline
        runs from when the runner handed it (never later than now)."""
        started = time.monotonic()
        # every field first (ProtocolError): a child taken is always watched
        req_id = field(data, "id", int)
        pid = field(data, "child", int)
        key = field(data, "key", str)
        at = min(float(field(data, "at", int, float)), started)
        timeout = float(field(data, "timeout_s", int, float))
        trace: list[tuple[str, int]] | None = [] if field(data, "trace", bool) else None
        max_output = field(data, "max_output", int)
        self.drop_lent(data.get("drop"))
        self.children.overlap(data.get("busy") is True)
        child = self.children.take(pid)
        if child is None:  # never: the runner names only children lent to it, once
            self.send(failed(req_id, started, "runtime", "bad request: no such child"))
            return
        code = self.codes.known(key)
        if code is not None:
            self.children.hint.note(code)
        self.follow(child, Waiting(req_id, b"", at, at + timeout, max_output, trace))

    def follow(self, child: Spawned, call: Waiting) -> None:
        """Watch `child`, which runs `call`."""
        limit = max(call.max_output + 4096, MAX_NET_REQUEST + 4096)
        self.watch(
            child,
            InFlight(
                call.req_id,
                child.pid,
                child.pidfd,
                child.result,
                call.deadline,
                call.started,
                call.max_output,
                go=child.go,
                trace=call.trace,
                frames=FrameReader(limit),
            ),
        )

    def serve_waiting(self) -> None:
        """Hand the calls waiting for a child to those that arrived; a failed fork
        fails the call that waited longest (as it would have failed on the spot)."""
        while self.waiting and self.give(self.waiting[0]):
            self.waiting.popleft()
        failure, self.children.failure = self.children.failure, None
        if failure is not None and self.waiting:
            msg = f"could not start a sandbox process: {failure}"
            self.send(unserved(self.waiting.popleft(), "runtime", msg))

    def owes(self) -> bool:
        """Whether the zygote owes this helper an answer: a child asked for, or the
        exit status of a child whose call waits for it (each takes milliseconds)."""
        return self.zygote.asked > 0 or bool(self.awaiting)

    def zygote_wait(self, now: float) -> float | None:
        """Seconds the zygote may stay silent while calls wait on it (None: none
        waits, or it owes nothing); once it has owed an answer for ZYGOTE_WAIT_S
        without a word while calls wait, this helper retires (`retire`)."""
        if not self.owes():
            self.owed_since = None
            return None
        if self.owed_since is None:
            self.owed_since = now
        if not (self.waiting or self.awaiting):
            return None  # nobody waits on it (yet): a zygote stopped a while may resume
        left = self.owed_since + self.zygote_wait_s - now
        if left <= 0:
            self.retire(now - self.owed_since)
        return left

    def retire(self, silent: float) -> NoReturn:
        """The zygote is stopped or stuck: no child and no exit status will come.
        Tell the runner to send new calls to a new helper (with a new zygote), and the
        calls waiting on this one too (no child took them: nothing of them ran), and
        exit (the calls in flight fail)."""
        self.write(retire_frame([w.req_id for w in self.waiting]))
        self.waiting.clear()
        why = f"the sandbox zygote did not answer for {silent:.1f} s (stopped or stuck)"
        for p in self.awaiting.values():
            msg = f"the tool exited without a valid result; its exit status never came: {why}"
            self.send(traced(p, failed(p.req_id, p.started, "runtime", msg)))
        raise SystemExit(1)

    def watch(self, child: Spawned, call: InFlight) -> None:
        os.set_blocking(child.result, False)
        os.set_blocking(child.go, False)
        self.pending[child.result] = call
        self.sel.register(child.result, selectors.EVENT_READ, "child")

    def child_readable(self, fd: int) -> None:
        p = self.pending[fd]
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            self.finish(p, None)
            return
        if p.killed or p.frames is None:
            return
        try:
            docs = p.frames.feed(chunk)
        except FrameTooLarge:
            self.kill_output(p)
            return
        for doc in docs:
            if doc == DIRECT_DONE_DOC:  # the child answered the runner itself
                self.finish(p, doc, send=False)
                return
            ask = relay.net_request(doc)
            if ask is None:  # the outcome frame
                if len(doc) > p.max_output + 4096:
                    self.kill_output(p)
                else:
                    self.finish(p, doc)
                return
            if isinstance(ask, ProtocolError):
                relay.refuse(p, str(ask))
                self.flush(p)
                continue
            p.asks += 1
            self.write(encode_ask(p.req_id, p.asks, ask))

    def kill_output(self, p: InFlight) -> None:
        p.killed = "output"
        kill(p.pidfd)

    def answer(self, call: int, seq: int, doc: bytes) -> None:
        """The runner's answer to a child's `net` request: into its go pipe."""
        for p in self.pending.values():
            if p.req_id == call and p.asks == seq and not p.killed:
                relay.queue(p, doc)
                self.flush(p)
                return

    def flush(self, p: InFlight) -> None:
        waiting = p.go in self.answering
        if relay.flush(p) and not waiting:
            self.answering[p.go] = p
            self.sel.register(p.go, selectors.EVENT_WRITE, "go")
        elif not p.outbox and waiting:
            del self.answering[p.go]
            self.sel.unregister(p.go)

    def finish(self, p: InFlight, doc: bytes | None, send: bool = True) -> None:
        """Reply for `p`: at once when its result frame is complete (`doc`; the child
        is reaped later, off the call's path), else at EOF after reaping it. `send`
        False: the child answered the runner directly; no reply of ours."""
        mark(p.trace, "helper_result" if doc is not None else "helper_eof")
        self.sel.unregister(p.fd)
        os.close(p.fd)
        if self.answering.pop(p.go, None) is not None:
            self.sel.unregister(p.go)
        os.close(p.go)
        del self.pending[p.fd]
        if doc is not None:
            if send:
                self.send(traced(p, outcome(p, 0, doc)))
            if self.statuses.pop(p.pid, None) is None:
                self.exiting[p.pid] = Lingering(time.monotonic() + LINGER_S, p.pidfd)
            else:
                os.close(p.pidfd)
            return
        status = self.statuses.pop(p.pid, None)
        if status is None and not p.killed:  # the zygote reports the exit status: reply then
            self.awaiting[p.pid] = p  # (a call killed here needs none: outcome)
            return
        self.send_outcome(p, status or 0)

    def send_outcome(self, p: InFlight, status: int) -> None:
        os.close(p.pidfd)
        self.send(traced(p, outcome(p, status, None)))

    def exited(self, pid: int, status: int) -> None:
        """The zygote reaped `pid`."""
        if self.children.exited(pid):  # lent: the runner may have handed it a call
            self.statuses[pid] = status
            if self.lend is not None:  # unless it did, the runner drops it at once
                with contextlib.suppress(OSError):  # no room: its EPIPE says it later
                    self.lend.send(encode_gone(pid), socket.MSG_DONTWAIT)
        elif (p := self.awaiting.pop(pid, None)) is not None:
            self.send_outcome(p, status)
        elif (gone := self.exiting.pop(pid, None)) is not None:
            os.close(gone.pidfd)
        elif any(p.pid == pid for p in self.pending.values()):
            self.statuses[pid] = status  # its pipe's EOF comes next

    def reap(self) -> float | None:
        """Children that sent their result but linger past LINGER_S are killed, each
        once (its exit status then closes its pidfd: `exited`); seconds until the
        next one is due (None: none is)."""
        now = time.monotonic()
        wait: float | None = None
        for child in self.exiting.values():
            if child.killed:
                continue
            if now >= child.kill_after:
                child.killed = True
                kill(child.pidfd)
            else:
                left = child.kill_after - now
                wait = left if wait is None else min(wait, left)
        return wait

    def lingering(self) -> bool:
        """Whether a child that sent its result may still have to be killed (one
        killed already needs nothing more of this helper)."""
        return any(not child.killed for child in self.exiting.values())

    def stdin_readable(self) -> bool:
        chunk = os.read(0, STDIN_READ)
        if not chunk:
            return False
        for doc in self.requests.feed(chunk):  # FrameTooLarge: exit, the runner restarts us
            try:
                data = load(doc)
                op = data.get("op")
                if op == "net_answer":
                    self.answer(*decode_answer(data))
                    continue
                if op == HANDED_OP:
                    self.handed(data)
                    continue
                if op == DROP_OP:
                    self.drop_lent(data.get("drop"))
                    continue
                req = request_of(data)
                self.lent_back(data)
                self.children.overlap(data.get("busy") is True)
            except ProtocolError as exc:
                self.refuse(doc, exc)
                continue
            self.start_job(req, data.get("code") is True)
        return True

    def lent_back(self, data: dict[str, Any]) -> None:
        """A request's lent children: those the runner drops, the one it gives back
        for this call."""
        self.drop_lent(data.get("drop"))
        give = data.get("give")
        if type(give) is int:
            if give in self.children.dead:  # it died while lent: discarded
                self.statuses.pop(give, None)
            self.children.give_back(give)

    def drop_lent(self, pids: object) -> None:
        """Kill the lent children of `pids` (a list from the runner), which the runner
        will never use, and forget their exit statuses."""
        for pid in pids if isinstance(pids, list) else ():
            if type(pid) is int and pid in self.children.lent:
                self.children.drop(pid)
                self.statuses.pop(pid, None)

    def refuse(self, doc: bytes, exc: ProtocolError) -> None:
        """Answer a malformed request if it carries an id (else nobody waits for it)."""
        try:
            req_id = json.loads(doc).get("id")
        except (ValueError, AttributeError, RecursionError):
            return
        if type(req_id) is int:
            self.send(failed(req_id, time.monotonic(), "runtime", f"bad request: {exc}"))

    def close_stdin(self) -> None:
        """The runner closed our stdin: kill the calls in flight, then exit."""
        self.open_stdin = False
        self.sel.unregister(0)
        while self.waiting:
            self.send(unserved(self.waiting.popleft(), "runtime", "the sandbox helper closed"))
        for p in self.pending.values():
            p.killed = p.killed or "timeout"
            kill(p.pidfd)

    def expire(self) -> float | None:
        """Kill the calls past their deadline (and fail those no child took yet:
        a runtime error, not a timeout, since the tool never ran); seconds until the
        next deadline."""
        now = time.monotonic()
        wait: float | None = None
        for w in [w for w in self.waiting if now >= w.deadline]:
            self.waiting.remove(w)
            msg = NOT_STARTED.format(limit=w.deadline - w.started)
            self.send(unserved(w, "runtime", msg))
        for w in self.waiting:
            wait = w.deadline - now if wait is None else min(wait, w.deadline - now)
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

    def plan(self) -> float | None:
        """Ask for the waiting children that are missing; how long to wait for events."""
        timeout = self.expire()
        linger = self.reap()  # no wake-up for a killed child: its exit report wakes us
        if linger is not None:
            timeout = linger if timeout is None else min(timeout, linger)
        if self.open_stdin:
            # also while calls are in flight, when fewer children wait (forge.child_pool)
            wait = self.children.top_up(len(self.pending) + len(self.waiting))
            if wait is not None:  # forking failed recently: try again later
                timeout = wait if timeout is None else min(timeout, wait)
        silent = self.zygote_wait(time.monotonic())  # after the asks above
        if silent is not None:
            timeout = silent if timeout is None else min(timeout, silent)
        return timeout

    def dispatch(self, key: selectors.SelectorKey) -> None:
        if key.data == "stdin":
            if not self.stdin_readable():
                self.close_stdin()
            elif self.lend is not None:
                self.children.lend(self.lend)  # one given back and not used, say
        elif key.data == "zygote":
            self.owed_since = None  # it is alive: what it still owes counts from now
            if not self.children.collect():
                raise SystemExit(1)  # no zygote: the runner restarts this helper
            self.serve_waiting()
            if self.lend is not None and self.open_stdin:
                self.children.lend(self.lend)  # after the calls waiting took theirs
        elif key.data == "go":
            self.flush(self.answering[key.fd])
        elif key.fd in self.pending:
            self.child_readable(key.fd)

    def serve(self) -> None:
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, "stdin")
        self.sel.register(self.zygote.sock, selectors.EVENT_READ, "zygote")
        gc.collect()
        gc.freeze()
        self.children.refill()  # the first waiting child, asked for before the hello
        self.write(encode_hello(Hello(os.getpid(), self.zygote.pid, self.caps)))
        while self.open_stdin or self.pending or self.lingering() or self.awaiting or self.waiting:
            for key, _ in self.sel.select(self.plan()):
                self.dispatch(key)
            while self.zygote.exits:
                self.exited(*self.zygote.exits.pop(0))


class Arguments(NamedTuple):
    layers: Layers
    answer_fd: int
    warm: bool
    slices: bool
    depth: int
    zygote_wait_s: float = ZYGOTE_WAIT_S


def arguments(argv: list[str]) -> Arguments:
    """The helper's command line after the project root: the layers switched off (a
    JSON object; none: every layer on), `answers=FD`, the runner's answer socket
    (none: every reply goes through this helper), `children=N` (children forked
    ahead of demand; none: `IDLE_CHILDREN`), `zygote-wait=S` (the zygote's silence,
    in seconds, that retires this helper while calls wait; none: `ZYGOTE_WAIT_S`;
    0.1 at least), `cold` (waiting children do not warm their call's path) and
    `default-slices` (the call's path does not ask for a short time slice); the
    last two for measurements only."""
    layers, answer_fd, warm, slices, depth = Layers(), -1, True, True, IDLE_CHILDREN
    wait = ZYGOTE_WAIT_S
    for arg in argv:
        if arg.startswith("lend="):
            continue  # `lend_argument`
        if arg.startswith("answers="):
            answer_fd = int(arg.removeprefix("answers="))
        elif arg.startswith("children="):
            depth = int(arg.removeprefix("children="))
        elif arg.startswith("zygote-wait="):
            wait = max(0.1, float(arg.removeprefix("zygote-wait=")))
        elif arg == "cold":
            warm = False
        elif arg == "default-slices":
            slices = False
        else:
            layers = Layers(**json.loads(arg))
    return Arguments(layers, answer_fd, warm, slices, depth, wait)


def lend_argument(argv: list[str]) -> int:
    """`lend=FD`: the lending socket (forge.protocol.lending); -1: none."""
    for arg in argv:
        if arg.startswith("lend="):
            return int(arg.removeprefix("lend="))
    return -1


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    layers, answer_fd, warm, slices, depth, zygote_wait_s = arguments(sys.argv[2:])
    lend_fd = lend_argument(sys.argv[2:])
    ctx, caps = prepare(layers, answer_fd, warm)
    protect_library(ctx.proxies)  # library methods check their self (forge.bound_self)
    rehearse_calls(ctx)  # every child starts warm (forge.rehearsal)
    zygote = Zygote.start(ctx)  # before the first request is read
    # this process is on every call's path, the zygote and waiting children are not
    # (they keep the default slice; forge.confine.sched)
    if slices:
        set_slice(0, CALL_SLICE_NS)
    if answer_fd >= 0:
        os.close(answer_fd)  # the zygote and its children hold it; this process never writes

    # the zygote closed its copy of the lending socket before its first fork
    lend = socket.socket(fileno=lend_fd) if lend_fd >= 0 else None
    if lend is not None:
        lend.shutdown(socket.SHUT_RD)  # nothing flows to this process on it
    helper = Helper(
        ctx, caps, zygote, CALL_SLICE_NS if slices else None, depth, lend, zygote_wait_s
    )
    try:
        with contextlib.suppress(BrokenPipeError):
            helper.serve()
    finally:
        helper.children.close()
        zygote.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
