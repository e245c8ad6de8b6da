"""A client that pipelines requests and never reads its answers cannot take the web down.

Raw sockets against the real web app on 127.0.0.1: each attacker connection
sends many pipelined `GET /static/big.js` and reads nothing, so the server's
answers pile up unsent. Before: a connection given way at the per-client cap
was closed gracefully, which waits for the unsent bytes forever, and the
table forgot it while its socket stayed open; the server's descriptors grew
with every attacker connection until the descriptor ceiling refused everyone
(`/healthz` of another client: 503). Now a connection is cut with `abort()`,
leaves the table only when it has really closed, and one whose answers wait
unread for `send_idle_s` is cut by the sweep, with one log line per client.
Each wait is for the server's own state (a socket gone, answers queued), with
the generous bound of `tests.waits` only against a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.channels.web.channel import WebChannel
from bridge.channels.web.conns import ConnLimits
from bridge.types.messages import Final, Inbound
from tests.sockdiag import tcp_rows
from tests.waits import shut, until

PER_CLIENT = 4
ATTACKERS = 24  # connections of one attacker address, each left holding unread answers
BIG = 256 * 1024  # one answer: far more than the socket buffers of a client that never reads


async def answer(inbound: Inbound, on_delta: object, on_progress: object) -> Final:
    return Final("ok", "answer")


def lowest_free_fd() -> int:
    probe = socket.socket()
    try:
        return probe.fileno()
    finally:
        probe.close()


def served(port: int) -> int:
    """Server-side sockets of this process on `port` (not the listener): what the web
    server really holds, whatever its table says."""
    ours = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            ours.add(target[8:-1])
    count = 0
    for family in (socket.AF_INET, socket.AF_INET6):  # /proc/net/tcp and tcp6
        for local, _, state, inode in tcp_rows(family):
            if local == port and state != "0A" and inode in ours:
                count += 1
    return count


@pytest.fixture
async def js(tmp_path: Path) -> Path:
    (tmp_path / "big.js").write_bytes(b"/" * BIG)
    return tmp_path


async def started(js: Path, limits: ConnLimits) -> WebChannel:
    web = WebChannel(answer, lambda: [], "t" * 20, "127.0.0.1", 0, js_dir=js, limits=limits)
    await web.start()
    return web


@pytest.fixture
async def web(js: Path) -> AsyncIterator[WebChannel]:
    start = lowest_free_fd()
    # room for the attacker's own sockets (this process), what the table may hold and a
    # few more: a server that forgets sockets it still holds reaches the ceiling
    limits = ConnLimits(
        max_total=16,
        per_client=PER_CLIENT,
        fd_ceiling=start + ATTACKERS + 16,
        send_idle_s=3600.0,  # here only giving way at the cap may free them
    )
    channel = await started(js, limits)
    yield channel
    await channel.stop()


def attack(port: int) -> socket.socket:
    """A connection with pipelined requests whose answers it never reads."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    request = f"GET /static/big.js HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    with contextlib.suppress(BlockingIOError):  # what fits: the server reads it slowly
        sock.send(request * 40)
    return sock


def unread(web: WebChannel, sock: socket.socket) -> bool:
    """The server holds answers for `sock` that it could not hand to the kernel."""
    port = sock.getsockname()[1]
    for handler in list(web.guard._by_handler):  # the server side of each admitted connection
        transport = handler.transport
        if transport is None or transport.is_closing():
            continue
        peer = transport.get_extra_info("peername")
        if peer is not None and peer[1] == port and transport.get_write_buffer_size() > 0:
            return True
    return False


async def healthz_from_another_client(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.2", 0))
    try:
        writer.write(
            f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
        )
        return (await reader.readline()).strip()
    finally:
        await shut(writer)


async def test_a_client_that_never_reads_its_answers_keeps_nobody_out(
    web: WebChannel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "bridge.channels.web.site")
    held: list[socket.socket] = []
    try:
        for _ in range(ATTACKERS):
            held.append(attack(web.port))
            await until(lambda: unread(web, held[-1]), "the server holding unread answers")
            assert await healthz_from_another_client(web.port) == b"HTTP/1.1 200 OK"
            # what the server really holds goes back down to what its table allows
            await until(lambda: served(web.port) <= PER_CLIENT, "the server's sockets")
        assert web.guard.table.total <= PER_CLIENT and web.guard.table.evicted >= ATTACKERS - 4
        assert web.guard.table.refused == {}
        told = [r.getMessage() for r in caplog.records if "cut a connection" in r.getMessage()]
        assert len(told) == 1 and "127.0.0.1" in told[0] and "was idle" in told[0], told
    finally:
        for sock in held:
            sock.close()
    await until(lambda: served(web.port) == 0, "every connection gone")
    await until(lambda: web.guard.table.total == 0, "the table empty")


async def test_answers_left_unread_are_cut_after_send_idle_s(
    js: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "bridge.channels.web.site")
    limits = ConnLimits(max_total=16, per_client=PER_CLIENT, fd_ceiling=1 << 30, send_idle_s=0.5)
    web = await started(js, limits)
    held = [attack(web.port), attack(web.port)]
    try:
        for each in held:
            await until(functools.partial(unread, web, each), "the server holding unread answers")
        await until(lambda: served(web.port) == 0, "the server cutting both connections")
        await until(lambda: web.guard.table.total == 0, "the table empty")
        assert web.guard.table.timed_out == 2
        told = [r.getMessage() for r in caplog.records if "cut a connection" in r.getMessage()]
        assert told == ["web: cut a connection of 127.0.0.1: it read none of its answers for 0.5 s"]
        assert await healthz_from_another_client(web.port) == b"HTTP/1.1 200 OK"
    finally:
        for sock in held:
            sock.close()
        await web.stop()
