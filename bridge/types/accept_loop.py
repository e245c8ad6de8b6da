"""The accept loop of roost's own HTTP listeners, shared by the web server and `roost mcp --http`.

Each server (`bridge.channels.web.site` in front of aiohttp,
`bridge.mcp.guard` in front of uvicorn) accepts in a loop of its own
(`Acceptor`) and asks its connection table (`bridge.types.conn_table`) about
each socket before its HTTP server sees a byte: a refused one gets a short
`503` (`refuse`: closed at once, its descriptor free again), an admitted one
is handed to the HTTP server's protocol (`hand_over`) through `Guarded`, a
thin protocol that tells the table when the connection goes (and, where the
server wants it, when its writes pause) and keeps its transport in a `Link`
for the table to cut. When `accept()` itself fails for want of descriptors
(EMFILE, ENFILE) the longest-idle connection is closed to make room and the
loop waits a moment; one log line when that starts and one when it ends
(asyncio's own loop would log a traceback per attempt). `Told` keeps a
server's "once per client and reason" log lines once. Only the standard
library: what is the server's own stays in its adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Protocol

SHORTAGE = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_PAUSE_S = 0.1  # after a descriptor shortage with nothing idle to close
TOLD_MAX = 4096  # keys remembered as told (a log line each), the oldest forgotten


class Sheds(Protocol):
    def shed(self) -> bool: ...  # close the longest-idle connection; False when none is


class Link:
    """One admitted connection's transport once it exists; a cut asked for before
    that happens as soon as it does."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.cut = False

    def abort(self) -> None:  # not close(): that waits for a client that may never read
        self.cut = True
        if self.transport is not None:
            self.transport.abort()

    def unsent(self) -> int:
        return self.transport.get_write_buffer_size() if self.transport is not None else 0


class Guarded(asyncio.Protocol):
    """The HTTP server's protocol for one connection; `made`, `lost` and `writes` are
    the server's hooks (its table told)."""

    def __init__(self, inner: asyncio.Protocol, link: Link) -> None:
        self._inner, self._link = inner, link

    def made(self) -> None:
        """The transport exists (in `_link`), before the HTTP server sees it."""

    def lost(self) -> None:
        """The connection has gone, before the HTTP server is told."""

    def writes(self, paused: bool) -> None:
        """The transport's writes paused (its client reads nothing) or flow again."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._link.transport = transport
        self.made()
        self._inner.connection_made(transport)
        if self._link.cut:  # cut while it was being set up
            transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost()
        self._inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self.writes(True)
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self.writes(False)
        self._inner.resume_writing()


def hand_over(
    loop: asyncio.AbstractEventLoop,
    sock: socket.socket,
    protocol: asyncio.Protocol,
    failed: Callable[[], None],
) -> None:
    """Serve `sock` with `protocol`; `failed()` and the socket closed if that fails."""

    def connected(done: asyncio.Task[Any]) -> None:
        if done.cancelled() or done.exception() is not None:
            failed()
            sock.close()

    task = loop.create_task(loop.connect_accepted_socket(lambda: protocol, sock))
    task.add_done_callback(connected)


def refuse(sock: socket.socket, answer: bytes) -> None:
    """A short answer (the 503) and close at once, without waiting for anything."""
    with contextlib.suppress(OSError):
        sock.setblocking(False)
        sock.recv(65536)  # what already arrived: closing over unread bytes would reset
    with contextlib.suppress(OSError):
        sock.send(answer)
    sock.close()


class Told:
    """Keys already told (a log line each), the oldest forgotten past `most`."""

    def __init__(self, most: int = TOLD_MAX) -> None:
        self._told: OrderedDict[Hashable, None] = OrderedDict()
        self._most = most

    def first(self, key: Hashable) -> bool:
        """True the first time `key` is seen (since it was last forgotten)."""
        if key in self._told:
            return False
        self._told[key] = None
        if len(self._told) > self._most:
            self._told.popitem(last=False)
        return True


class Acceptor:
    """Accepts on listening sockets until cancelled; each socket goes to `admit`."""

    def __init__(
        self,
        name: str,  # in the log lines: "web", "MCP"
        log: logging.Logger,
        table: Sheds,
        admit: Callable[[socket.socket, Any], None],  # the socket and its peer address
        gave_way: Callable[[], None],  # log what the table cut for room
    ) -> None:
        self._name, self._log, self._table = name, log, table
        self._admit, self._gave_way = admit, gave_way
        self._shortage = 0

    async def accepting(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        sock.setblocking(False)
        while True:
            try:
                conn, address = await loop.sock_accept(sock)
            except OSError as exc:
                if exc.errno not in SHORTAGE:
                    raise
                self._short(exc)
                if not self._table.shed():
                    await asyncio.sleep(ACCEPT_PAUSE_S)
                self._gave_way()
                await asyncio.sleep(0)  # the cut connection's descriptor closes first
                continue
            if self._shortage:
                self._log.warning(
                    "%s: accepting again after %d refused accepts", self._name, self._shortage
                )
                self._shortage = 0
            self._admit(conn, address)
            # sock_accept does not yield while connections wait: let the loop close the
            # ones that gave way (their descriptors) and start the admitted ones
            await asyncio.sleep(0)

    def _short(self, exc: OSError) -> None:
        if not self._shortage:
            self._log.warning(
                "%s: cannot accept connections (%s); closing idle ones to make room",
                self._name,
                exc.strerror,
            )
        self._shortage += 1
