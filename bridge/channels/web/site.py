"""The web server's listener: roost's own accept loop, so no flood reaches aiohttp unchecked.

`GuardedSite` replaces aiohttp's `TCPSite`: it binds the listening sockets
itself and accepts in a loop of its own (`bridge.types.accept_loop`, shared
with `roost mcp --http`), asking `ConnTable` (`bridge.channels.web.conns`)
about each connection before aiohttp sees a byte. A refused one gets a short
`503` and is closed at once (its descriptor is free again before any HTTP
work); an admitted one is handed to aiohttp's `RequestHandler` through a thin
protocol that tells the table when it goes. When `accept()` itself fails for
want of descriptors (EMFILE, ENFILE), the longest-idle connection is closed
to make room and the loop waits a moment; one log line when that starts and
one when it ends. The request head must be complete within
`header_timeout_s` (aiohttp's keep-alive timer, which also runs from the
moment a connection opens); `WebGuard.middleware` marks requests busy while
they are handled (but not while a body is read before its request could be
authenticated, `conn_table.unproven`: a webhook's body that never comes gives
way like an idle connection), closes the connection after a 401 or 403 or
once its client pipelined more than `PIPELINED_MAX` requests (what it
pipelined behind is never read), and a sweep once a second cuts connections
whose request body stalls or runs late, or whose client leaves its answers
unread (`send_idle_s`), logs once per client why it cut one, and logs one
summary line per minute of what was refused. A connection is cut with
`transport.abort()`: a graceful close would wait for a client that never
reads, its descriptor open; the table counts it until `connection_lost`.
Files (the page) go out through the transport's buffer like every other
answer, never the kernel's `sendfile` (`no_sendfile`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import socket
from collections.abc import Iterator
from typing import Any, TypeVar

from aiohttp import web, web_fileresponse
from aiohttp.typedefs import Handler
from aiohttp.web_protocol import RequestHandler

from bridge.channels.web.conns import Conn, ConnLimits, ConnTable, Cut
from bridge.types.accept_loop import Acceptor, Guarded, Link, Told, hand_over, refuse
from bridge.types.conn_table import give_way_while, reset_give_way

log = logging.getLogger(__name__)

SWEEP_S = 1.0
REPORT_S = 60.0
REFUSED = frozenset({401, 403})  # answers to a request without valid credentials
PIPELINED_MAX = 16  # requests of a connection sent before the previous one's answer
R = TypeVar("R", bound=web.StreamResponse)
BUSY_BODY = json.dumps(
    {"error": "roost has too many open connections right now; try again in a few seconds"}
).encode()
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 5\r\nConnection: close\r\nCache-Control: no-store\r\n"
    + f"Content-Length: {len(BUSY_BODY)}\r\n\r\n".encode()
    + BUSY_BODY
)


class WebGuard:
    """The connection table of one web server and the middleware that marks requests busy."""

    def __init__(self, limits: ConnLimits) -> None:
        self.table = ConnTable(limits)
        self._by_handler: dict[RequestHandler, Conn] = {}

    @property
    def limits(self) -> ConnLimits:
        return self.table.limits

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        conn = self._by_handler.get(request.protocol)
        if conn is None:
            return await handler(request)
        self.table.busy(conn, request.content, asyncio.get_running_loop().time())
        if _queued(request.protocol):
            conn.pipelined += 1
        hook = give_way_while(functools.partial(self._unproven, conn))
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            _last(exc, conn)
            raise
        finally:
            reset_give_way(hook)
            self.table.done(conn)
        return _last(response, conn)

    @contextlib.contextmanager
    def _unproven(self, conn: Conn) -> Iterator[None]:
        """While a request's body is read before it could be authenticated (`unproven`):
        its connection is idle, and the longest idle gives way to a newcomer."""
        self.table.handled(conn)
        try:
            yield
        finally:
            self.table.handling(conn)

    def attach(self, handler: RequestHandler, conn: Conn) -> None:
        self._by_handler[handler] = conn

    def detach(self, handler: RequestHandler, conn: Conn) -> None:
        self._by_handler.pop(handler, None)
        self.table.gone(conn)


def _queued(handler: RequestHandler) -> bool:
    """More requests of this connection already arrived (pipelined): aiohttp parses all
    it received into its queue before handling the first."""
    return bool(getattr(handler, "_messages", ()))


def _last(response: R, conn: Conn) -> R:
    """`response` closes its connection once sent (what its client pipelined behind it is
    never read) when it refuses a request for want of credentials (401, 403), or when
    the client has pipelined more than `PIPELINED_MAX` requests: a client that sends
    thousands of requests per write and never reads the answers (each small enough for
    the socket buffers, so no stall rule fires) costs a few answers per connection, not
    thousands. Browsers and HTTP libraries wait for each answer; never near the cap."""
    if response.status in REFUSED or conn.pipelined > PIPELINED_MAX:
        response.force_close()
    return response


class _Guarded(Guarded):
    """aiohttp's handler for one connection, and the table told when it goes."""

    def __init__(self, inner: RequestHandler, guard: WebGuard, conn: Conn, link: Link) -> None:
        super().__init__(inner, link)
        self._handler, self._guard, self._conn = inner, guard, conn

    def made(self) -> None:
        self._guard.attach(self._handler, self._conn)

    def lost(self) -> None:
        self._guard.detach(self._handler, self._conn)


class _Listening(asyncio.AbstractServer):
    """The listening sockets and their tasks, closed by `BaseSite.stop()`."""

    def __init__(self, sockets: list[socket.socket], tasks: list[asyncio.Task[None]]) -> None:
        self._sockets, self._tasks = sockets, tasks
        self._loop = asyncio.get_running_loop()

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    async def start_serving(self) -> None:
        return None  # serving from the start

    async def serve_forever(self) -> None:
        await self.wait_closed()

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return tuple(self._sockets)

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for sock in self._sockets:
            sock.close()
        self._sockets = []

    def is_serving(self) -> bool:
        return bool(self._sockets)

    async def wait_closed(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)


def bind(host: str, port: int, backlog: int) -> list[socket.socket]:
    """Listening sockets for `host` (every address it names; all interfaces for "")."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    made: list[socket.socket] = []
    seen: set[Any] = set()
    try:
        for family, kind, proto, _, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            made.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except OSError:
        for sock in made:
            sock.close()
        raise
    return made


def no_sendfile() -> None:
    """Files (aiohttp's `FileResponse`: the page) go out through the transport's buffer,
    as every other answer, not the kernel's `sendfile` (aiohttp's own switch, the
    `AIOHTTP_NOSENDFILE` its environment variable sets). A native `sendfile` bypasses
    the buffer, so answers a client leaves unread are not seen as unsent (the
    `send_idle_s` rule never cuts it); and a cut (`abort()`) while it waits leaves the
    socket's writer in the selector (CPython 3.11), so the next connection given the
    same descriptor number cannot register, is never read and is reset at the header
    timeout. The page is a few kilobytes: nothing to gain from `sendfile`."""
    web_fileresponse.NOSENDFILE = True  # type: ignore[misc]


class GuardedSite(web.BaseSite):
    """A TCP site whose connections pass `WebGuard` before aiohttp serves them."""

    __slots__ = ("_acceptor", "_bound", "_guard", "_host", "_port", "_told")

    def __init__(
        self, runner: web.BaseRunner, host: str, port: int, guard: WebGuard, backlog: int = 128
    ) -> None:
        super().__init__(runner, backlog=backlog)
        self._host, self._port, self._guard = host, port, guard
        self._bound = port
        self._told = Told()
        self._acceptor = Acceptor("web", log, guard.table, self._admit, self._gave_way)

    @property
    def name(self) -> str:
        return f"http://{self._host or '0.0.0.0'}:{self._bound}"

    @property
    def port(self) -> int:
        return self._bound

    async def start(self) -> None:
        await super().start()
        no_sendfile()
        sockets = bind(self._host, self._port, self._backlog)
        if sockets:
            self._bound = sockets[0].getsockname()[1]
        tasks = [asyncio.create_task(self._acceptor.accepting(sock)) for sock in sockets]
        tasks.append(asyncio.create_task(self._sweeping()))
        self._server = _Listening(sockets, tasks)

    def _admit(self, conn: socket.socket, address: Any) -> None:
        loop = asyncio.get_running_loop()
        host = address[0] if isinstance(address, tuple) else str(address)
        link = Link()
        table = self._guard.table
        made = table.admit(host, conn.fileno(), link.abort, loop.time(), link.unsent)
        self._gave_way()
        if isinstance(made, str):
            refuse(conn, BUSY)
            return
        server = self._runner.server
        assert server is not None
        hand_over(loop, conn, _Guarded(server(), self._guard, made, link), lambda: table.gone(made))

    def _gave_way(self) -> None:
        table = self._guard.table
        for conn in table.gave_way:
            self._tell(conn.client, "room")
        table.gave_way.clear()

    def _tell(self, client: str, why: Cut) -> None:
        """One log line per client and reason for a connection cut."""
        if not self._told.first((client, why)):
            return
        limits = self._guard.limits
        detail = {
            "body stalled": f"its request body paused longer than {limits.body_idle_s:g} s",
            "body too slow": f"its request body took longer than {limits.body_timeout_s:g} s",
            "answers not read": f"it read none of its answers for {limits.send_idle_s:g} s",
            "room": f"it was idle and the connection limit ({limits.per_client} per client, "
            f"{limits.max_total} in all) was reached",
        }[why]
        log.warning("web: cut a connection of %s: %s", client, detail)

    async def _sweeping(self) -> None:
        loop = asyncio.get_running_loop()
        table = self._guard.table
        reported = (0, 0, 0)
        last = loop.time()
        while True:
            await asyncio.sleep(SWEEP_S)
            for conn, why in table.overdue(loop.time()):
                self._tell(conn.client, why)
                table.timeout(conn)
            if loop.time() - last < REPORT_S:
                continue
            last = loop.time()
            now = (sum(table.refused.values()), table.evicted, table.timed_out)
            if now != reported:
                refused, evicted, late = (a - b for a, b in zip(now, reported, strict=True))
                log.warning(
                    "web: in the last %ds refused %d connections (%s), closed %d idle ones "
                    "for room and %d slow request bodies; %d open",
                    REPORT_S,
                    refused,
                    ", ".join(f"{k}: {v}" for k, v in sorted(table.refused.items())) or "-",
                    evicted,
                    late,
                    table.total,
                )
                reported = now
