"""The decoder processes, as the daemon holds them: one process per file, bounded, fair.

`DecoderPool.decode(tenant, job, fd)` reads one attachment in its own
confined process (`decode_child`) and returns what it made (`Decoded`), or
raises `DecodeFailed` with the reason. It never runs in the daemon's thread
pool (uploads, SQLite and other tenants need that), and never in the
daemon's memory:

- at most `slots` files are read at once (`[limits] decoders`), at most
  `slots - 1` of them for one tenant, the next slot round-robin by tenant,
  `max_waiting` files queued per tenant (`fair.FairSlots`);
- each file gets a fresh process with the limits of `decode_confine`; one
  started, ready process is kept as a spare (its imports done), so a file
  does not wait for Python to start; a process reads one file and exits,
  so the memory a large image took is returned to the system at once;
- the decoder stops itself at `job.seconds` (`[limits] decode_seconds`);
  the daemon kills it (SIGKILL) a grace period later if it has not
  answered, and whenever the turn that waits for it is cancelled;
- `aclose()` kills every decoder, running or spare (shutdown always ends);
  a decoder also dies with the daemon (PDEATHSIG) if that is killed.

The reply is read with size bounds and validated (`decode_reply`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import ValidationError

from bridge.senses.decode_wire import Job, header_limit
from bridge.senses.fair import Busy, FairSlots

if TYPE_CHECKING:  # the strict reply models are built when a decoder first starts
    from bridge.senses.decode_reply import DecodeReply

log = logging.getLogger(__name__)
PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
# the decoder's first line: `bridge.senses.decode_child` (Pillow, pypdf) is imported there,
# never in the daemon
BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from bridge.senses.decode_child import main; main()"
)
Failure = Literal["time", "crashed", "busy", "closed", "start"]
READY_FRAME = 4096


class _Gone(Exception):
    """The decoder was gone before it took the job."""


class DecodeFailed(Exception):
    """No reply: out of `time` (killed), `crashed`, `busy` (queue full), `closed`, `start`."""

    def __init__(self, why: Failure) -> None:
        super().__init__(why)
        self.why: Failure = why


@dataclass(frozen=True, slots=True)
class Decoded:
    reply: DecodeReply
    blob: bytes = b""


@dataclass(frozen=True, slots=True)
class PoolSettings:
    slots: int = 2
    memory_bytes: int = 1024 * 1024 * 1024
    spares: int = 1
    max_waiting: int = 16
    ready_s: float = 120.0  # a generous bound for Python to start and import (a busy machine)
    python: str = sys.executable


def grace_s(seconds: float) -> float:
    """How long past its own deadline a decoder may take to answer before it is killed."""
    return max(2.0, seconds / 4)


@dataclass(eq=False)
class _Decoder:
    proc: asyncio.subprocess.Process
    sock: socket.socket
    missing: list[str] = field(default_factory=list)
    pidfd: int = -1  # signals through it never reach a recycled pid

    def __post_init__(self) -> None:
        with contextlib.suppress(OSError):  # already gone: nothing to signal
            self.pidfd = os.pidfd_open(self.proc.pid)

    @property
    def stdout(self) -> asyncio.StreamReader:
        assert self.proc.stdout is not None
        return self.proc.stdout

    async def end(self) -> int:
        """Kill it (if it still runs), reap it, close our end; its exit status. The
        signal goes through the pidfd: `Popen.kill` would reap a process that has
        just exited behind asyncio's back."""
        if self.proc.returncode is None and self.pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        code = await self.proc.wait()
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
        self.sock.close()
        return code


class DecoderPool:
    def __init__(self, settings: PoolSettings | None = None) -> None:
        self.settings = s = settings or PoolSettings()
        self._slots = FairSlots(s.slots, s.slots - 1, s.max_waiting)
        self._live: set[_Decoder] = set()
        self._spares: deque[asyncio.Task[_Decoder]] = deque()
        self._closed = False
        self._warned = False

    @property
    def pids(self) -> list[int]:
        """The process ids of every decoder alive now (running or spare)."""
        return sorted(d.proc.pid for d in self._live if d.proc.returncode is None)

    async def decode(self, tenant: str, job: Job, fd: int) -> Decoded:
        """Read the open file `fd` (the caller closes it) under `job`'s limits."""
        if self._closed:
            raise DecodeFailed("closed")
        try:
            async with self._slots.hold(tenant):
                try:
                    return await self._once(await self._take(), job, fd)
                except _Gone:  # the spare died while it waited (the OOM killer, say)
                    return await self._once(await self._start(), job, fd)
        except Busy:
            raise DecodeFailed("busy") from None
        except _Gone:
            raise DecodeFailed("crashed") from None

    async def _once(self, decoder: _Decoder, job: Job, fd: int) -> Decoded:
        try:
            return await self._run(decoder, job, fd)
        finally:
            self._live.discard(decoder)
            await asyncio.shield(decoder.end())

    async def aclose(self) -> None:
        """Kill every decoder; later calls fail with `closed`."""
        self._closed = True
        starting = list(self._spares)
        self._spares.clear()
        for task in starting:
            task.cancel()
        await asyncio.gather(*starting, return_exceptions=True)
        live, self._live = list(self._live), set()
        await asyncio.gather(*(d.end() for d in live), return_exceptions=True)

    async def _take(self) -> _Decoder:
        """A ready decoder: the spare when there is one; a spare is started for the next."""
        task = self._spares.popleft() if self._spares else None
        self._replenish()
        if task is None:
            return await self._start()
        try:
            return await task
        except DecodeFailed as exc:  # the spare died before it was ready: start afresh
            if exc.why == "closed":
                raise
            return await self._start()

    def _replenish(self) -> None:
        while not self._closed and len(self._spares) < self.settings.spares:
            task = asyncio.get_running_loop().create_task(self._start())
            task.add_done_callback(_quiet)
            self._spares.append(task)

    async def _start(self) -> _Decoder:
        from bridge.senses.decode_reply import Ready, read_frame

        s = self.settings
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *(s.python, "-I", "-c", BOOT, PROJECT_ROOT, str(s.memory_bytes)),
                stdin=theirs.fileno(),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={},
                cwd="/",
                start_new_session=True,
            )
        )
        try:
            proc = await asyncio.shield(spawn)  # a process once started is always ended
        except asyncio.CancelledError:
            await _end_spawned(spawn, mine)
            raise
        except OSError:
            mine.close()
            raise DecodeFailed("start") from None
        finally:
            theirs.close()
        decoder = _Decoder(proc, mine)
        self._live.add(decoder)
        try:
            async with asyncio.timeout(s.ready_s):
                ready = Ready.model_validate_json(await read_frame(decoder.stdout, READY_FRAME))
        except BaseException as exc:
            self._live.discard(decoder)
            await asyncio.shield(decoder.end())
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise DecodeFailed("closed" if self._closed else "start") from None
        if ready.missing and not self._warned:
            self._warned = True
            log.warning("senses: decoders run without %s on this machine", ", ".join(ready.missing))
        decoder.missing = list(ready.missing)
        return decoder

    async def _run(self, decoder: _Decoder, job: Job, fd: int) -> Decoded:
        from bridge.senses.decode_reply import parse_reply, read_frame

        try:
            socket.send_fds(decoder.sock, [job.encode()], [fd])
        except OSError:
            raise _Gone() from None
        try:
            async with asyncio.timeout(job.seconds + grace_s(job.seconds)):
                raw = await read_frame(decoder.stdout, header_limit(job.max_chars))
                reply = parse_reply(raw, job.max_chars)
                blob = await decoder.stdout.readexactly(reply.blob) if reply.blob else b""
        except TimeoutError:
            raise DecodeFailed("time") from None
        except asyncio.IncompleteReadError:
            code = await decoder.end()
            raise DecodeFailed("closed" if self._closed else _why_dead(code)) from None
        except (ValueError, ValidationError):
            raise DecodeFailed("crashed") from None
        return Decoded(reply, blob)


async def _end_spawned(
    spawn: asyncio.Future[asyncio.subprocess.Process], mine: socket.socket
) -> None:
    """A start cancelled midway: end the process if it was made, close our end."""
    try:
        proc = await spawn
    except Exception:
        mine.close()
        return
    await _Decoder(proc, mine).end()


def _why_dead(code: int) -> Failure:
    """A decoder that ended without a reply: out of CPU time, or crashed."""
    return "time" if code in (-signal.SIGXCPU, -signal.SIGKILL) else "crashed"


def _quiet(task: asyncio.Task[_Decoder]) -> None:
    """A spare that failed to start is reported when taken; not as 'never retrieved'."""
    if not task.cancelled():
        task.exception()
