"""One sandbox helper process as the daemon holds it: started, spoken to, shut.

`start_helper` launches forge.worker as `python -I -S` (no `site`, so no .pth
file runs in it: its path is given) with an empty environment and waits for its
`Hello`.
`HelperProcess` is the asyncio protocol of that process: request frames out,
one reply frame per call back (forge.protocol). With `direct` (the default of
the runner) it also holds this helper's answer
socket: the helper's children send most outcomes there themselves, one hop
fewer (forge.protocol.answers); such a call gets no reply frame from the helper.
A helper that retires (forge.protocol.calls `RETIRE`) or is killed is `dead` at
once: the next call goes to a new helper. The calls a retiring helper names (no
child took them) end with `Unserved`: the runner runs them again elsewhere.
An answer counts only with the token of a call in flight; anything else on the
socket is dropped and logged. The socket is read `READS_PER_WAKE` messages at a
time, so a child that broke out and floods it cannot hold the event loop (an
attacker pass held it 1.37 s); and `DROPS_TO_RETIRE` messages in a row that answer
no call (a late answer of a call given up on is one now and then, between real
ones) retire the helper: it is killed, its calls fail, the next call gets a new one.
Replies are decoded as their bytes arrive (`pipe_data_received`) and complete
the waiting call's future directly: no stream reader task in between. A
frame `{"op": "net", ...}` is a child's `net` request; it goes to `on_net`
(the runner's broker), whose answer is written back as a frame on stdin. When the
helper dies or breaks the protocol, every call it carried fails with
ConnectionError.

With `direct` it also holds the runner's end of the helper's lending socket
(forge.protocol.lending): the helper lends it its waiting children confined to
its workspace (`lent`) and the code of each tool it compiled (`codes`), so the
runner can write a call into a child itself (forge.runner); every lent child is
named back to the helper exactly once (handed, given back or dropped), and the
ones still held are closed when the helper goes.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import hmac
import importlib.util
import json
import logging
import os
import select
import signal
import socket
import subprocess
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from forge.layers import Layers
from forge.protocol.answers import MESSAGE_MAX, decode_direct
from forge.protocol.calls import (
    RETIRE_OP,
    Hello,
    Reply,
    decode_hello,
    reply_of,
    unserved_ids,
)
from forge.protocol.fields import load
from forge.protocol.frames import FrameReader, ProtocolError
from forge.protocol.jobs import direct_reply
from forge.protocol.lending import (
    LEND_FDS,
    LENT_MAX,
    Lent,
    decode_code,
    decode_gone,
    decode_lend,
    dropped_frame,
)
from forge.protocol.lending import MESSAGE_MAX as LEND_MESSAGE_MAX
from forge.protocol.net import NetAsk, decode_ask

log = logging.getLogger(__name__)
ANSWER_SNDBUF = 1 << 20  # queued answers of the children (capped by net.core.wmem_max)

OnNet = Callable[["HelperProcess", NetAsk], None]

PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)
HELPER_ENV: dict[str, str] = {}  # empty (LD_BIND_NOW=1 was measured: children copied more)


def helper_paths() -> list[str]:
    """What a helper puts on sys.path: the project, and RestrictedPython's directory."""
    spec = importlib.util.find_spec("RestrictedPython")
    where = spec.submodule_search_locations if spec is not None else None
    paths = [PROJECT_ROOT]
    if where:
        paths.append(os.path.dirname(next(iter(where))))
    return paths


def boot() -> str:
    """The helper's `-c` program. It runs with `-S`: no `site` (its .pth files and the
    editable install's finder are tens of ms of every helper's start), so it puts
    on sys.path what the helper needs (`helper_paths`)."""
    return f"import sys; sys.path[:0] = {helper_paths()!r}; from forge.worker import main; main()"


SHUT_WAIT_S = 5
READS_PER_WAKE = 64  # answer-socket messages read per wake-up of the loop
DROPS_TO_RETIRE = 64  # messages in a row that answer no call: the helper is retired
CODES_KEPT = 256  # tools' codes kept per helper (forge.code_cache keeps as many)
CODE_BYTES = 4 << 20  # and at most this many bytes of them (the oldest go first)


class Unserved(Exception):
    """A call its helper gave back when it retired: no child took it, nothing of it ran."""


class HelperProcess(asyncio.SubprocessProtocol):
    """The helper process and its protocol: frames out, one reply frame per call."""

    def __init__(
        self,
        limit: int,
        on_net: OnNet | None = None,
        answers: socket.socket | None = None,
        lend: socket.socket | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        self.transport: asyncio.SubprocessTransport | None = None
        self.stdin: asyncio.WriteTransport | None = None
        self.pending: dict[int, asyncio.Future[Reply]] = {}
        self.tokens: dict[int, bytes] = {}  # call id -> the token its direct answer carries
        self.answers = answers  # the runner's end of the answer socket (None: no direct answers)
        self._inbox = bytearray(MESSAGE_MAX + 1)  # one message; one byte more shows a longer one
        self.dropped = 0  # messages on the answer socket that answered no call
        self._dropped_in_a_row = 0  # since the last one that answered a call
        self.hello: asyncio.Future[Hello] = loop.create_future()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.dead = False
        self.zygote_pid: int | None = None
        self._broken = False
        self._frames = FrameReader(limit)  # a reply larger than any the helper may send
        self._paused = False
        self._drained: list[asyncio.Future[None]] = []
        self._on_net = on_net
        self._pidfd: int | None = None  # signals it without reaping it (see `kill`)
        self.lend = lend  # the runner's end of the lending socket (None: nothing is lent)
        self.lent: deque[Lent] = deque()  # children lent and not yet named back
        self.codes: OrderedDict[bytes, bytes] = OrderedDict()  # sha256 of a source -> code
        self._code_bytes = 0  # of `codes`
        self._lend_inbox = bytearray(LEND_MESSAGE_MAX + 1) if lend is not None else bytearray()
        self.drops: list[int] = []  # lent children to name back as dropped

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport
        given = getattr(transport, "pidfd", None)  # a forked helper's (forge.helper_fork)
        with contextlib.suppress(OSError):  # no pidfd (old kernel): `kill` falls back
            self._pidfd = os.dup(given) if given is not None else os.pidfd_open(transport.get_pid())
        stdin = transport.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        self.stdin = stdin
        if self.answers is not None:
            asyncio.get_running_loop().add_reader(self.answers.fileno(), self._answers_readable)
        if self.lend is not None:
            asyncio.get_running_loop().add_reader(self.lend.fileno(), self._lend_readable)

    @property
    def direct(self) -> bool:
        """Whether this helper's children may answer calls directly."""
        return self.answers is not None

    def expect(self, call_id: int, fut: asyncio.Future[Reply], token: bytes) -> None:
        """Wait for call `call_id`'s reply in `fut`; a direct answer must carry `token`."""
        self.pending[call_id] = fut
        if token:
            self.tokens[call_id] = token

    def forget(self, call_id: int) -> None:
        self.pending.pop(call_id, None)
        self.tokens.pop(call_id, None)

    def _lend_readable(self) -> None:
        """The helper's lend and code messages waiting on the lending socket (a
        truncated one is dropped, with its descriptors)."""
        sock = self.lend
        space = socket.CMSG_SPACE(LEND_FDS * 4)
        while sock is not None and self.lend is sock:
            try:
                n, ancdata, flags, _ = sock.recvmsg_into(
                    [self._lend_inbox], space, socket.MSG_CMSG_CLOEXEC
                )
            except BlockingIOError:
                return
            except OSError:
                self._close_lent()
                return
            got = array.array("i")
            for level, kind, payload in ancdata:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got.frombytes(payload[: len(payload) - len(payload) % got.itemsize])
            fds = list(got)
            if not n and not fds:  # the helper is gone
                self._close_lent()
                return
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                for fd in fds:
                    os.close(fd)
                continue
            self._lend_message(bytes(self._lend_inbox[:n]), fds)

    def _lend_message(self, data: bytes, fds: list[int]) -> None:
        if data[:1] in (b"C", b"G"):
            for fd in fds:  # only a lend message carries descriptors
                os.close(fd)
            fds = []
        try:
            if data[:1] == b"C":
                digest, code = decode_code(data)
                self._keep_code(digest, code)
                return
            if data[:1] == b"G":
                self._gone(decode_gone(data))
                return
            child = decode_lend(data, fds)
            os.set_blocking(child.go, False)  # a full pipe fails the hand-over, never waits
        except (ProtocolError, OSError):
            for fd in fds:
                os.close(fd)
            return
        if self.dead:
            close_lent(child)
            self.drops.append(child.pid)
            return
        self.lent.append(child)
        if len(self.lent) > LENT_MAX:  # more than a helper lends: the oldest goes
            oldest = self.lent.popleft()
            close_lent(oldest)
            self.drops.append(oldest.pid)
            self._send_drops()

    def _gone(self, pid: int) -> None:
        """Lent child `pid` died while lent: unless the runner handed it a call already,
        its copies are closed and it is named back as dropped now."""
        for child in self.lent:
            if child.pid == pid:
                self.lent.remove(child)
                close_lent(child)
                self.drops.append(pid)
                self._send_drops()
                return

    def _send_drops(self) -> None:
        """Name the dropped lent children back now, without waiting for a call."""
        if self.stdin is not None and not self.stdin.is_closing() and self.drops:
            self.stdin.write(dropped_frame(self.take_drops()))

    def _keep_code(self, digest: bytes, code: bytes) -> None:
        """Keep a tool's code, within `CODES_KEPT` codes and `CODE_BYTES` bytes."""
        old = self.codes.pop(digest, None)
        self._code_bytes += len(code) - (len(old) if old is not None else 0)
        self.codes[digest] = code
        while len(self.codes) > CODES_KEPT or self._code_bytes > CODE_BYTES:
            self._code_bytes -= len(self.codes.popitem(last=False)[1])

    def take(self, binding: tuple[str, int, int]) -> Lent | None:
        """A lent child confined to `binding` (the call's workspace resolved: path,
        device, inode), now the caller's to name back once; the lent children confined
        elsewhere are dropped (named back with the next frame: `take_drops`). None: none."""
        while self.lent and not self.dead:
            child = self.lent.popleft()
            if child.binding() == binding:
                return child
            close_lent(child)
            self.drops.append(child.pid)
        return None

    def drop(self, child: Lent) -> None:
        """`child` is never used (it died while waiting): named back with the next frame."""
        close_lent(child)
        self.drops.append(child.pid)

    def take_drops(self) -> tuple[int, ...]:
        """The lent children to name back as dropped (and forget)."""
        drops, self.drops = tuple(self.drops), []
        return drops

    def _close_lent(self) -> None:
        sock, self.lend = self.lend, None
        if sock is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed already
                asyncio.get_running_loop().remove_reader(sock.fileno())
            sock.close()
        while self.lent:
            close_lent(self.lent.popleft())

    def _answers_readable(self, limit: int = READS_PER_WAKE) -> None:
        """The messages waiting on the answer socket, up to `limit` (the rest wake the
        loop again): each completes its call."""
        sock = self.answers
        if sock is None:
            return
        view = memoryview(self._inbox)
        for _ in range(limit):
            if self.answers is None:  # closed by the last message (a retired helper)
                return
            try:
                n = sock.recv_into(self._inbox)
            except BlockingIOError:
                return
            except OSError:
                self._close_answers()
                return
            if n == 0 and _hung_up(sock):  # the zygote and every child are gone
                self._close_answers()
                return
            self._answer(view[:n])

    def _answer(self, message: memoryview) -> None:
        try:
            call_id, token, doc = decode_direct(message)
        except ProtocolError as exc:
            self._drop(str(exc))
            return
        expected = self.tokens.get(call_id)
        if expected is None or not hmac.compare_digest(expected, token):
            self._drop("no call in flight has its id and token")
            return
        del self.tokens[call_id]
        self._dropped_in_a_row = 0
        fut = self.pending.pop(call_id, None)
        if fut is not None and not fut.done():
            fut.set_result(direct_reply(call_id, doc))

    def _drop(self, why: str) -> None:
        """Count a message that answers no call; the first one of a helper is logged
        (a child that broke out could write many)."""
        self.dropped += 1
        self._dropped_in_a_row += 1
        if self.dropped == 1:
            log.warning("sandbox answer dropped (%s); later ones are only counted", why)
        if self._dropped_in_a_row == DROPS_TO_RETIRE:
            log.warning(
                "sandbox helper retired: its children sent %d messages in a row that answer "
                "no call (a tool that broke out of its sandbox?)",
                DROPS_TO_RETIRE,
            )
            self._close_answers()
            self.dead = True
            self.kill()

    def _close_answers(self) -> None:
        sock, self.answers = self.answers, None
        if sock is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed already
                asyncio.get_running_loop().remove_reader(sock.fileno())
            sock.close()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd != 1 or self._broken:
            return
        try:
            for doc in self._frames.feed(data if isinstance(data, bytes) else data.encode()):
                self._frame(doc)
        except ProtocolError:  # the helper broke the protocol: nothing it says counts
            self._broken = True
            self._down()

    def _frame(self, doc: bytes) -> None:
        if not self.hello.done():
            self.hello.set_result(decode_hello(doc))
            return
        data = load(doc)
        op = data.get("op")
        if op == "net":  # a child's `net` request, relayed
            ask = decode_ask(data)
            if self._on_net is not None:
                self._on_net(self, ask)
            return
        if op == RETIRE_OP:  # it serves no new call (its replies and exit follow)
            self.dead = True
            for req_id in unserved_ids(data):  # no child took them: they run elsewhere
                self.tokens.pop(req_id, None)
                fut = self.pending.pop(req_id, None)
                if fut is not None and not fut.done():
                    fut.set_exception(Unserved(req_id))
            return
        reply = reply_of(data)
        self.tokens.pop(reply.id, None)
        fut = self.pending.pop(reply.id, None)
        if fut is not None and not fut.done():
            fut.set_result(reply)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._down()

    def process_exited(self) -> None:
        # New calls go to a new helper; the calls this one carried fail at the EOF
        # of its stdout (after any replies it wrote before exiting are delivered).
        self.dead = True
        self._close_pidfd()
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._down()
        self._wake_writers()
        self._close_pidfd()
        if self.transport is not None:
            self.transport.close()

    def _down(self) -> None:
        """The helper is gone (or no longer readable): fail what it carried (the
        answers its children sent before count: as many as calls are in flight)."""
        self._answers_readable(len(self.tokens) + READS_PER_WAKE)
        self.dead = True
        self.kill()  # no-op when it has exited
        if not self.hello.done():
            self.hello.set_exception(ConnectionError("sandbox helper exited"))
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("sandbox helper exited"))
        self.pending.clear()
        self.tokens.clear()
        self._close_answers()
        self._close_lent()

    def kill(self) -> None:
        """SIGKILL it unless it is known to have exited. Through its pidfd: the
        transport's `kill` (`Popen.send_signal`) first polls, which reaps a helper
        that exited before asyncio's child watcher saw it, and the watcher then logs
        "Unknown child process" and reports 255 instead of its status."""
        if self.transport is None or self.transport.get_returncode() is not None:
            return
        self.dead = True  # new calls go to a new helper, not to this dying one
        with contextlib.suppress(ProcessLookupError):
            if self._pidfd is None:
                self.transport.kill()
            else:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_writers()

    def _wake_writers(self) -> None:
        for fut in self._drained:
            if not fut.done():
                fut.set_result(None)
        self._drained.clear()

    async def send(self, data: bytes) -> None:
        if self.dead or self.stdin is None or self.stdin.is_closing():
            raise ConnectionError("sandbox helper exited")
        self.stdin.write(data)
        if self._paused:
            fut = asyncio.get_running_loop().create_future()
            self._drained.append(fut)
            await fut
            if self.dead:
                raise ConnectionError("sandbox helper exited")

    def pid(self) -> int | None:
        return self.transport.get_pid() if self.transport is not None else None

    def close(self) -> None:
        """EOF on its stdin: the helper finishes its calls and exits."""
        if self.stdin is not None:
            self.stdin.close()

    async def shut(self) -> None:
        """Close it and wait for it to exit (killing it if it does not)."""
        self.close()
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), SHUT_WAIT_S)
        except TimeoutError:
            self.kill()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.exited), SHUT_WAIT_S)
        if self.transport is not None:
            self.transport.close()


def close_lent(child: Lent) -> None:
    """Close the runner's descriptors of a lent child (once it is named back)."""
    for fd in (child.go, child.job):
        with contextlib.suppress(OSError):
            os.close(fd)


def _hung_up(sock: socket.socket) -> bool:
    """Whether the other end of `sock` is closed (else an empty message was read)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLRDHUP)
    return any(ev & (select.POLLRDHUP | select.POLLHUP) for _, ev in poller.poll(0))


def answer_socket() -> tuple[socket.socket, socket.socket]:
    """(the runner's end, the helper's end) of a new answer socket: records, the
    runner's end shut for writing (nothing flows to a child), both close-on-exec
    (`pass_fds` hands the helper's end to the helper alone)."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    mine.shutdown(socket.SHUT_WR)
    with contextlib.suppress(OSError):
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, ANSWER_SNDBUF)
    mine.setblocking(False)
    return mine, theirs


def lend_socket() -> tuple[socket.socket, socket.socket]:
    """(the runner's end, the helper's end) of a new lending socket
    (forge.protocol.lending): records, the runner's end shut for writing (nothing
    flows to the helper on it), both close-on-exec."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    mine.shutdown(socket.SHUT_WR)
    with contextlib.suppress(OSError):
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 2 * LEND_MESSAGE_MAX)
    mine.setblocking(False)
    return mine, theirs


def helper_argv(
    layers: Layers,
    warm: bool,
    slices: bool,
    children: int | None,
    zygote_wait_s: float | None = None,
) -> list[str]:
    """A helper's command line after the project root, but for its answer socket
    (forge.worker.arguments)."""
    argv = [json.dumps(asdict(layers))] if layers.switched_off() else []
    if not warm:
        argv.append("cold")
    if not slices:
        argv.append("default-slices")
    if children is not None:
        argv.append(f"children={children:d}")
    if zygote_wait_s is not None:
        argv.append(f"zygote-wait={zygote_wait_s!r}")
    return argv


async def start_helper(
    python: str,
    layers: Layers,
    max_reply: int,
    on_net: OnNet | None = None,
    direct: bool = True,
    warm: bool = True,
    slices: bool = True,
    children: int | None = None,
    zygote_wait_s: float | None = None,
) -> tuple[HelperProcess, Hello]:
    """A new helper running with `layers` (its command line; none switched off: no
    argument) and its `Hello`; RuntimeError when it fails to start. `direct`: give
    it an answer socket (its children answer calls directly). `warm` False: its
    waiting children do not warm their call's path; `slices` False: the helper and
    the child handed a call keep the default time slice (both for measurements
    only; forge.confine.sched). `children`: how many children it forks ahead of
    demand (None: forge.child_pool's default). `zygote_wait_s`: how long its zygote
    may stay silent while calls wait before it retires (None: forge.worker's default)."""
    extra = helper_argv(layers, warm, slices, children, zygote_wait_s)
    mine, theirs = answer_socket() if direct else (None, None)
    lend, lend_theirs = lend_socket() if direct else (None, None)
    passed: tuple[int, ...] = ()
    if theirs is not None and lend_theirs is not None:
        extra += [f"answers={theirs.fileno()}", f"lend={lend_theirs.fileno()}"]
        passed = (theirs.fileno(), lend_theirs.fileno())
    loop = asyncio.get_running_loop()
    try:
        _, helper = await loop.subprocess_exec(
            lambda: HelperProcess(max_reply, on_net, mine, lend),
            python,
            "-I",
            "-S",
            "-c",
            boot(),
            PROJECT_ROOT,
            *extra,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=HELPER_ENV,
            cwd="/",
            pass_fds=passed,
        )
    except BaseException:
        for sock in (mine, lend):
            if sock is not None:
                sock.close()
        raise
    finally:
        for sock in (theirs, lend_theirs):
            if sock is not None:
                sock.close()  # the helper's copy is its own now
    return helper, await said_hello(helper)


async def said_hello(helper: HelperProcess) -> Hello:
    """The new helper's `Hello` (its zygote noted); RuntimeError (it is killed) when it
    exits or breaks the protocol first."""
    try:
        hello = await helper.hello
    except ConnectionError:
        helper.kill()
        raise RuntimeError("sandbox helper failed to start") from None
    helper.zygote_pid = hello.zygote
    return hello
