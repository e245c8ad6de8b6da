"""Sandbox helpers forked from the runner's template (forge.template), not exec'd.

`HelperTemplate` starts the template process once (as a helper would start:
`python -I -S`, empty environment, cwd `/`) and asks it for helpers over its
control socket. `fork_helper` makes a new helper's pipes and answer socket,
hands them to the template, and wraps the forked process in a `HelperProcess`
through `ForkedTransport`: the same protocol as an exec'd helper's, over plain
pipes, with the helper's exit seen on the pidfd the template sent. The helper is
the template's child, not the runner's: the template reaps it, so its exit
status is not known here (`EXIT_UNKNOWN`, asyncio's own value for a child it
could not wait for).

A template that fails (it cannot start, exits, answers late or wrongly) raises
`TemplateError`; the runner then starts that helper the exec'd way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
from typing import Any

from forge.helper_process import (
    HELPER_ENV,
    PROJECT_ROOT,
    HelperProcess,
    OnNet,
    answer_socket,
    helper_paths,
    lend_socket,
    said_hello,
)
from forge.protocol.calls import Hello
from forge.template import MAX_REQUEST, READY

TEMPLATE_START_S = 30.0  # from its exec to its `ready` (imports, on a busy machine)
TEMPLATE_ANSWER_S = 3.0  # for a fork's answer (a few ms), and for its exit at close
EXIT_UNKNOWN = 255  # a forked helper's status: its parent, the template, reaped it


class TemplateError(Exception):
    """The template could not fork a helper (the runner execs one instead)."""


def template_boot() -> str:
    """The template's `-c` program (`-S`: its path is given, as a helper's is)."""
    return f"import sys; sys.path[:0] = {helper_paths()!r}; from forge.template import main; main()"


class HelperTemplate:
    """The runner's template process: started on the first `fork`, one request at a time."""

    def __init__(self, python: str) -> None:
        self.python = python
        self.forks = 0  # helpers forked by this runner's templates
        self.starts = 0  # templates started (a new one after one failed)
        self._proc: asyncio.subprocess.Process | None = None
        self._control: socket.socket | None = None
        self._lock = asyncio.Lock()

    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def running(self) -> bool:
        """Whether it runs and serves requests (an abandoned one does not)."""
        proc = self._proc
        return self._control is not None and proc is not None and proc.returncode is None

    async def fork(self, argv: list[str], fds: list[int]) -> tuple[int, int]:
        """A new helper with command line `argv` on descriptors `fds` (stdin's read
        end, stdout's write end, the answer socket if any): its (pid, pidfd).
        `fds` stay the caller's to close."""
        async with self._lock:
            try:
                return await self._fork(argv, fds)
            except TemplateError:
                raise
            except BaseException:  # cancelled: an answer may still come, and no later
                self._abandon()  # request may read it as its own
                raise

    async def _fork(self, argv: list[str], fds: list[int]) -> tuple[int, int]:
        if not self.running():
            await self._start()
        control = self._control
        assert control is not None
        try:
            socket.send_fds(control, [json.dumps(argv).encode()], fds)
            data, got = await asyncio.wait_for(_recv_fds(control), TEMPLATE_ANSWER_S)
        except (OSError, TimeoutError) as exc:  # dead, stopped or stuck: a new one next
            await self._stop(kill=True)
            raise TemplateError(f"the helper template failed ({exc!r})") from None
        answer = _answer(data)
        if "pid" not in answer or len(got) != 1:
            for fd in got:
                os.close(fd)
            await self._stop(kill=True)
            raise TemplateError(f"the helper template answered {answer!r}")
        self.forks += 1
        return int(answer["pid"]), got[0]

    def _abandon(self) -> None:
        """Serve no more requests with this template: its socket closed, it killed (the
        next `_start` or `aclose` reaps it)."""
        control, self._control = self._control, None
        if control is not None:
            control.close()
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()

    async def _start(self) -> None:
        await self._stop(kill=True)  # a template that exited or failed
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = await asyncio.create_subprocess_exec(
                self.python,
                "-I",
                "-S",
                "-c",
                template_boot(),
                PROJECT_ROOT,
                f"control={theirs.fileno()}",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=HELPER_ENV,
                cwd="/",
                pass_fds=(theirs.fileno(),),
            )
        except OSError as exc:
            mine.close()
            raise TemplateError(f"the helper template could not start ({exc})") from None
        finally:
            theirs.close()
        mine.setblocking(False)
        self._control = mine
        self.starts += 1
        try:
            ready = await asyncio.wait_for(
                asyncio.get_running_loop().sock_recv(mine, 64), TEMPLATE_START_S
            )
        except (OSError, TimeoutError):
            ready = b""
        if ready != READY:
            await self._stop(kill=True)
            raise TemplateError("the helper template did not start")

    async def _stop(self, kill: bool = False) -> None:
        """Close the control socket (the template exits at its EOF) and reap it;
        `kill`, or no exit within TEMPLATE_ANSWER_S: SIGKILL it (a stopped one too)."""
        control, self._control = self._control, None
        if control is not None:
            control.close()
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if not kill:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(proc.wait()), TEMPLATE_ANSWER_S)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    async def aclose(self) -> None:
        async with self._lock:
            await self._stop()


def _answer(data: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(data)
    except ValueError:
        return {"error": "not JSON"}
    return answer if isinstance(answer, dict) else {"error": "not an object"}


async def _recv_fds(sock: socket.socket) -> tuple[bytes, list[int]]:
    """One message of `sock` (non-blocking) with the descriptors it carries."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST, 1)
        except BlockingIOError:
            readable = loop.create_future()
            loop.add_reader(sock.fileno(), _set_once, readable)
            try:
                await readable
            finally:
                loop.remove_reader(sock.fileno())
            continue
        for fd in fds:  # SCM_RIGHTS gives them without close-on-exec
            os.set_inheritable(fd, False)
        if not data:
            for fd in fds:
                os.close(fd)
            raise OSError("the helper template closed its socket")
        return data, fds


def _set_once(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class ForkedTransport(asyncio.SubprocessTransport):
    """What `HelperProcess` needs of asyncio's subprocess transport, for a forked
    helper: its stdin and stdout pipes, its pid, its exit (seen on `pidfd`)."""

    def __init__(self, protocol: HelperProcess, pid: int, pidfd: int) -> None:
        super().__init__()
        self._protocol = protocol
        self._pid = pid
        self.pidfd = pidfd  # owned here; HelperProcess signals through a copy of it
        self._loop = asyncio.get_running_loop()
        self._pipes: dict[int, asyncio.BaseTransport] = {}
        self._open: set[int] = set()
        self._returncode: int | None = None
        self._closed = False
        self._finished = False

    async def connect(self, stdin_w: int, stdout_r: int) -> None:
        """Take the runner's ends of the helper's pipes, then tell the protocol."""
        loop = self._loop
        try:
            stdin, _ = await loop.connect_write_pipe(
                lambda: _PipeProto(self, 0), os.fdopen(stdin_w, "wb", buffering=0)
            )
        except BaseException:
            os.close(stdout_r)
            raise
        self._pipes[0] = stdin
        stdout, _ = await loop.connect_read_pipe(
            lambda: _PipeProto(self, 1), os.fdopen(stdout_r, "rb", buffering=0)
        )
        self._pipes[1] = stdout
        self._open = {0, 1}
        loop.add_reader(self.pidfd, self._exited)
        self._protocol.connection_made(self)

    def get_pid(self) -> int:
        return self._pid

    def get_returncode(self) -> int | None:
        return self._returncode

    def get_pipe_transport(self, fd: int) -> asyncio.BaseTransport | None:
        return self._pipes.get(fd)

    def send_signal(self, signum: int) -> None:
        if self._returncode is None:
            signal.pidfd_send_signal(self.pidfd, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def is_closing(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the pipes and kill the helper if it still runs (as asyncio's does)."""
        if self._closed:
            return
        self._closed = True
        for pipe in self._pipes.values():
            pipe.close()
        if self._returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.kill()

    def abort(self) -> None:
        """Give up a helper whose connection failed half-way: kill it, close what is open."""
        self.close()
        if self.pidfd >= 0:
            with contextlib.suppress(ValueError, RuntimeError):  # not watched, loop closed
                self._loop.remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = -1

    def _exited(self) -> None:
        self._loop.remove_reader(self.pidfd)
        self._returncode = EXIT_UNKNOWN
        os.close(self.pidfd)
        self.pidfd = -1
        self._protocol.process_exited()
        self._try_finish()

    def _pipe_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        self._protocol.pipe_connection_lost(fd, exc)
        self._try_finish()

    def _try_finish(self) -> None:
        if self._returncode is not None and not self._open and not self._finished:
            self._finished = True
            self._protocol.connection_lost(None)


class _PipeProto(asyncio.Protocol):
    """One pipe of a forked helper: its events go to the helper's protocol."""

    def __init__(self, owner: ForkedTransport, fd: int) -> None:
        self.owner, self.fd = owner, fd

    def data_received(self, data: bytes) -> None:
        self.owner._protocol.pipe_data_received(self.fd, data)

    def eof_received(self) -> bool:
        return False  # close this end

    def connection_lost(self, exc: Exception | None) -> None:
        self.owner._pipe_lost(self.fd, exc)

    def pause_writing(self) -> None:
        self.owner._protocol.pause_writing()

    def resume_writing(self) -> None:
        self.owner._protocol.resume_writing()


async def fork_helper(
    template: HelperTemplate,
    argv: list[str],
    max_reply: int,
    on_net: OnNet | None = None,
    direct: bool = True,
) -> tuple[HelperProcess, Hello]:
    """A helper forked by `template` with command line `argv` (forge.worker.arguments,
    without `answers=`: the template adds it), and its `Hello`. TemplateError when
    the template fails; RuntimeError when the helper does not say hello."""
    mine, theirs = answer_socket() if direct else (None, None)
    lend, lend_theirs = lend_socket() if direct else (None, None)
    in_r, in_w = os.pipe2(os.O_CLOEXEC)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    given = [in_r, out_w]
    if theirs is not None and lend_theirs is not None:
        given += [theirs.fileno(), lend_theirs.fileno()]
    try:
        pid, pidfd = await template.fork(argv, given)
    except BaseException:
        for fd in (in_w, out_r):
            os.close(fd)
        for sock in (mine, lend):
            if sock is not None:
                sock.close()
        raise
    finally:
        for fd in (in_r, out_w):
            os.close(fd)
        for sock in (theirs, lend_theirs):
            if sock is not None:
                sock.close()  # the helper's copy is its own now
    helper = HelperProcess(max_reply, on_net, mine, lend)
    transport = ForkedTransport(helper, pid, pidfd)
    try:
        await transport.connect(in_w, out_r)
    except BaseException:
        transport.abort()
        raise
    return helper, await said_hello(helper)
