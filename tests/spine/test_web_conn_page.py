"""A client that asks for the page and never reads it: cut in time, and cutting it harms no one.

The page (`GET /`, no token) is a file, which aiohttp hands to the kernel's
`sendfile` past the transport's buffer. Before: the answers such a client
left unread were invisible to the sweep (the transport's buffer stays empty),
so it was never cut for them; and a connection cut while a `sendfile` waited
(given way at a cap) left that socket's writer in the event loop's selector
(CPython 3.11: an `InvalidStateError` in `_call_connection_lost`), so the next
connection handed the same descriptor number failed to register
(`FileNotFoundError` in `_add_reader`): its request was never read and it was
reset at the header timeout. Against a real `roost serve` a client with the
token got `Connection reset` after 10 s that way. Now guarded connections send
files through their buffer, so both rules hold as for any other answer. Each
wait is for the server's own state, bounded only against a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import select
import socket
from pathlib import Path

import pytest

from bridge.channels.web.channel import WebChannel
from bridge.channels.web.conns import ConnLimits
from tests.spine.test_web_evict import healthz_from_another_client, served, started
from tests.waits import until

WAIT_S = 60.0  # a safety net against a hang, never a speed check
PAGE = 256 * 1024  # far more than the socket buffers of a client that never reads


@pytest.fixture
def page(tmp_path: Path) -> Path:
    (tmp_path / "index.html").write_bytes(b"<!-- roost -->" + b" " * PAGE)
    return tmp_path


def ask_for_the_page(port: int) -> socket.socket:
    """A connection with pipelined requests for the page, whose answers it never reads."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    with contextlib.suppress(BlockingIOError):
        sock.send(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode() * 20)
    return sock


def stuck(web: WebChannel, sock: socket.socket) -> bool:
    """The server's side of `sock` cannot send more: its kernel buffer is full."""
    port = sock.getsockname()[1]
    ends = [handler.transport for handler in list(web.guard._by_handler)]  # the server sides
    for end in ends:
        if end is not None and not end.is_closing() and end.get_extra_info("peername")[1] == port:
            return not select.select([], [end.get_extra_info("socket")], [], 0)[1]
    return False


async def test_a_page_left_unread_is_cut_after_send_idle_s(page: Path) -> None:
    limits = ConnLimits(max_total=16, per_client=4, fd_ceiling=1 << 30, send_idle_s=0.5)
    web = await started(page, limits)
    hog = ask_for_the_page(web.port)
    try:
        await until(lambda: stuck(web, hog), "the server's side full of unread page")
        async with asyncio.timeout(WAIT_S):  # before: never
            await until(lambda: web.guard.table.timed_out == 1, "the sweep cutting it")
        await until(lambda: served(web.port) == 0, "the connection gone")
    finally:
        hog.close()
        await web.stop()


async def test_a_connection_cut_in_the_middle_of_the_page_harms_no_later_one(
    page: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    limits = ConnLimits(max_total=2, per_client=2, fd_ceiling=1 << 30, send_idle_s=3600.0)
    web = await started(page, limits)
    hogs: list[socket.socket] = []
    try:
        for _ in range(2):  # the whole table: each in the middle of the page
            hogs.append(ask_for_the_page(web.port))
            await until(lambda: stuck(web, hogs[-1]), "the server's side full of unread page")
        for n in range(6):  # each newcomer pushes out a hog (a new one takes its place)
            assert await healthz_from_another_client(web.port) == b"HTTP/1.1 200 OK"
            await until(lambda n=n: web.guard.table.evicted == n + 1, "a hog given way")
            hogs.append(ask_for_the_page(web.port))
            await until(lambda: stuck(web, hogs[-1]), "the server's side full of unread page")
        broken = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert broken == []
    finally:
        for sock in hogs:
            sock.close()
        await until(lambda: served(web.port) == 0, "every connection gone")
        await web.stop()
