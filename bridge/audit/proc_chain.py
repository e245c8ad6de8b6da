"""`ProcessAuditChain`: the `AuditChain` interface, with its writer in a process of its own.

The loop fits each event to its schema (as `AuditChain` does), sends a
turn's events as one frame over a socketpair to the writer process
(`bridge.audit.writer_process`), and reads the acknowledgements with
`loop.add_reader`: no thread of this process takes part, so the writer's
system calls never wait for the loop's GIL. A writer process that dies
fails every batch waiting on it with `AuditWriterDied` and is started
again (its open repairs a torn tail, as after a crash). `aclose` lets the
writer finish what it received, sync the head and exit.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from bridge.audit.chain import AuditChain
from bridge.audit.frames import frame, split
from bridge.audit.keys import load_names_key
from bridge.audit.record import check_event, check_tenant
from bridge.audit.schema import keyed_namer
from bridge.audit.store import ChainCorrupt, exclusive, lock_path

log = logging.getLogger(__name__)


class AuditWriterDied(RuntimeError):
    """The writer process exited while a batch waited: it may or may not be durable."""


def _error(kind: str, why: str) -> Exception:
    if kind == "ChainCorrupt":
        return ChainCorrupt(why)
    if kind in ("OSError", "FileNotFoundError", "PermissionError"):
        return OSError(why)
    return RuntimeError(f"audit append failed: {kind}: {why}")


def _read_one(sock: socket.socket) -> Any:
    """One frame, blocking (the open's answer); None at EOF."""
    buf = bytearray()
    while True:
        got = split(buf)
        if got:
            return got[0]
        data = sock.recv(4096)
        if not data:
            return None
        buf += data


class ProcessAuditChain(AuditChain):
    """Append-only, hash-linked, fsynced JSONL audit log; the writer is a child process."""

    _sock: socket.socket | None = None
    _proc: subprocess.Popen[bytes] | None = None

    async def open(self) -> None:
        self._ids = itertools.count()
        self._waiting: dict[int, asyncio.Future[int]] = {}
        self._in = bytearray()
        self._out = bytearray()
        self._closing = False
        self._closed: asyncio.Future[None] | None = None
        self._restart: asyncio.Task[None] | None = None
        if self._names_key is None:
            self._names_key = await asyncio.to_thread(self._load_names)
        self._namer = keyed_namer(self._names_key)
        await self._start()

    def _load_names(self) -> bytes:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(lock_path(self.path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            with exclusive(fd):
                return load_names_key(self.path.parent)
        finally:
            os.close(fd)

    async def _start(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            proc = await asyncio.to_thread(
                subprocess.Popen,
                [sys.executable, "-m", "bridge.audit.writer_process", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
            )
        finally:
            theirs.close()
        ours.sendall(frame((str(self.path), self._key, self._names_key, self._max_batch)))
        answer = await asyncio.to_thread(_read_one, ours)
        if not isinstance(answer, tuple) or answer[1] is not None:
            ours.close()
            code = await asyncio.to_thread(proc.wait)
            if isinstance(answer, tuple):
                raise _error(str(answer[1]), str(answer[2]))
            raise AuditWriterDied(f"the audit writer process exited on open (status {code})")
        ours.setblocking(False)
        self._sock, self._proc = ours, proc
        asyncio.get_running_loop().add_reader(ours.fileno(), self._readable)

    async def aclose(self) -> None:
        if self._restart is not None:
            await asyncio.gather(self._restart, return_exceptions=True)
        sock, proc = self._sock, self._proc
        if sock is None or proc is None:
            return
        self._closing = True
        self._closed = asyncio.get_running_loop().create_future()
        if self._out:  # what the socket did not take yet: sent before the EOF
            asyncio.get_running_loop().remove_writer(sock.fileno())
            sock.setblocking(True)
            sock.sendall(self._out)
            sock.setblocking(False)
            self._out.clear()
        sock.shutdown(socket.SHUT_WR)  # EOF: the writer finishes what it has and exits
        await self._closed
        await asyncio.to_thread(proc.wait)
        self._proc = None

    async def emit_many(
        self, events: Sequence[tuple[str, str | None, Mapping[str, object]]]
    ) -> None:
        items = []
        for event, tenant, details in events:
            check_event(event)
            check_tenant(tenant)
            items.append((event, tenant, self._fit(event, tenant, details), self._now()))
        if items:
            await self._batch(items)

    async def append(self, event: str, tenant: str | None, details: Mapping[str, object]) -> int:
        check_event(event)
        check_tenant(tenant)
        return await self._batch([(event, tenant, self._fit(event, tenant, details), self._now())])

    async def _batch(self, items: list[tuple[str, str | None, dict[str, object], int]]) -> int:
        if self._restart is not None:
            await asyncio.shield(self._restart)
        if self._sock is None or self._closing:
            raise RuntimeError("audit chain is not open")
        bid = next(self._ids)
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiting[bid] = done
        self._send(frame((bid, items)))
        return await done

    def _send(self, data: bytes) -> None:
        assert self._sock is not None
        if self._out:
            self._out += data
            return
        try:
            n = self._sock.send(data)
        except BlockingIOError:
            n = 0
        except OSError:
            return  # the reader sees the writer gone and fails the waiter
        if n < len(data):
            self._out += data[n:]
            asyncio.get_running_loop().add_writer(self._sock.fileno(), self._writable)

    def _writable(self) -> None:
        assert self._sock is not None
        try:
            n = self._sock.send(self._out)
        except BlockingIOError:
            return
        except OSError:
            n = len(self._out)
        del self._out[:n]
        if not self._out:
            asyncio.get_running_loop().remove_writer(self._sock.fileno())

    def _readable(self) -> None:
        assert self._sock is not None
        try:
            data = self._sock.recv(1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._gone()
            return
        self._in += data
        for answer in split(self._in):
            bid, seq, *rest = answer
            fut = self._waiting.pop(bid, None)
            if fut is None or fut.done():
                continue
            if seq is None:
                fut.set_exception(_error(str(rest[0]), str(rest[1])))
            else:
                self.batches = int(rest[0])
                fut.set_result(seq)

    def _gone(self) -> None:
        """EOF from the writer: the end of a shutdown, or the process died."""
        loop = asyncio.get_running_loop()
        sock, proc = self._sock, self._proc
        assert sock is not None and proc is not None
        loop.remove_reader(sock.fileno())
        if self._out:
            loop.remove_writer(sock.fileno())
            self._out.clear()
        sock.close()
        self._sock = None
        waiting, self._waiting = self._waiting, {}
        if waiting:
            code = proc.poll()
            died = AuditWriterDied(
                "the audit writer process exited"
                + (f" (status {code})" if code is not None else "")
                + " before these records were acknowledged: they may not be durable"
            )
            for fut in waiting.values():
                if not fut.done():
                    fut.set_exception(died)
        if self._closing:
            if self._closed is not None and not self._closed.done():
                self._closed.set_result(None)
            return
        log.error("audit writer process exited unexpectedly; starting it again")
        self._restart = loop.create_task(self._again(proc))

    async def _again(self, proc: subprocess.Popen[bytes]) -> None:
        try:
            await asyncio.to_thread(proc.wait)
            self._in.clear()
            await self._start()
        finally:
            self._restart = None
