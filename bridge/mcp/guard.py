"""`roost mcp --http`'s listener: roost's own accept loop in front of uvicorn.

`Guard.accepting` accepts in a loop of its own (`bridge.types.accept_loop`,
shared with the web server) and asks `ConnTable` (`bridge.mcp.conns`) about
each connection before uvicorn sees a byte. A refused one gets a short `503`
with `Retry-After` (its body a JSON-RPC error the SDK's client shows as is),
its request read and dropped until the client closes (a few at once, two
seconds at most; closed at once when descriptors are short); an admitted one
is handed to uvicorn's HTTP protocol through a thin protocol that tells the
table when it goes and when its writes pause (a client that reads none of
its answers: its connection gives way as if idle). When `accept()` itself
fails for want of descriptors (EMFILE, ENFILE) the longest-idle connection
is closed to make room. The ASGI wrapper `Guard.app` marks a connection busy
while a request of it is handled. One log line per client and reason
(refused, or cut for room), never a traceback per connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from bridge.mcp.conns import Conn, ConnTable, McpLimits, Peer, client_key
from bridge.types.accept_loop import Acceptor, Guarded, Told, hand_over, refuse
from bridge.types.accept_loop import Link as _Link

log = logging.getLogger("roost.mcp")

DRAIN_S = 2.0  # a refused connection's request is read and dropped for at most this
REFUSING_MAX = 32  # refused connections drained at once; past it, closed at once


def rpc_error(message: str) -> bytes:
    """A JSON-RPC error body (id null: the request was not read), as MCP clients show it."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
    return json.dumps(error).encode()


def busy_answer(limits: McpLimits) -> bytes:
    body = rpc_error(
        "roost's MCP server has too many open connections right now; "
        f"try again in {limits.retry_after_s} seconds"
    )
    return (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        + f"Retry-After: {limits.retry_after_s}\r\n".encode()
        + b"Connection: close\r\nCache-Control: no-store\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


async def refuse_cleanly(conn: socket.socket, answer: bytes) -> None:
    """A short 503, then the request read and dropped until the client closes (at most
    `DRAIN_S`): a socket closed before its request arrived would answer it with a
    reset, which can destroy the 503 before the client reads it."""
    loop = asyncio.get_running_loop()
    try:
        await loop.sock_sendall(conn, answer)
        conn.shutdown(socket.SHUT_WR)
        async with asyncio.timeout(DRAIN_S):
            while await loop.sock_recv(conn, 65536):
                pass
    except (OSError, TimeoutError):
        pass
    finally:
        conn.close()


def peer_of(address: Any) -> Peer:
    if isinstance(address, tuple) and len(address) >= 2:
        return str(address[0]), int(address[1])
    return str(address), 0


class _Guarded(Guarded):
    """uvicorn's protocol for one connection, and the table told when it goes and
    when its writes pause."""

    def __init__(self, inner: asyncio.Protocol, table: ConnTable, conn: Conn, link: _Link) -> None:
        super().__init__(inner, link)
        self._table, self._conn = table, conn

    def lost(self) -> None:
        self._table.gone(self._conn)

    def writes(self, paused: bool) -> None:
        self._table.stall(self._conn, paused)  # a client that reads nothing: it may give way


class Guard:
    """The connection table of one MCP HTTP server, its accept loop and its ASGI wrapper."""

    def __init__(self, limits: McpLimits) -> None:
        self.table = ConnTable(limits)
        self._busy = busy_answer(limits)
        self._told = Told()
        self._refusing: set[asyncio.Task[None]] = set()

    def app(self, inner: ASGIApp) -> ASGIApp:
        """`inner`, with each request's connection marked busy while it is handled."""

        async def marked(scope: Scope, receive: Receive, send: Send) -> None:
            client = scope.get("client")
            conn = self.table.at(peer_of(tuple(client))) if client else None
            if scope["type"] == "lifespan" or conn is None:
                await inner(scope, receive, send)
                return
            self.table.busy(conn)
            try:
                await inner(scope, receive, send)
            finally:
                self.table.done(conn)

        return marked

    async def accepting(
        self, sock: socket.socket, protocol: Callable[[], asyncio.Protocol]
    ) -> None:
        """Accept on `sock` until cancelled; each admitted connection gets `protocol()`."""
        loop = asyncio.get_running_loop()

        def admit(conn: socket.socket, address: Any) -> None:
            self._admit(loop, conn, peer_of(address), protocol)

        await Acceptor("MCP", log, self.table, admit, self._gave_way).accepting(sock)

    def _admit(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        peer: Peer,
        protocol: Callable[[], asyncio.Protocol],
    ) -> None:
        link = _Link()
        made = self.table.admit(peer, sock.fileno(), link.abort, loop.time())
        self._gave_way()
        if isinstance(made, str):
            self._refused(peer, made)
            if made == "fd" or len(self._refusing) >= REFUSING_MAX:
                refuse(sock, self._busy)
                return
            refusing = loop.create_task(refuse_cleanly(sock, self._busy))
            self._refusing.add(refusing)
            refusing.add_done_callback(self._refusing.discard)
            return
        guarded = _Guarded(protocol(), self.table, made, link)
        hand_over(loop, sock, guarded, lambda: self.table.gone(made))

    def _gave_way(self) -> None:
        limits = self.table.limits
        for conn in self.table.gave_way:
            self._tell(
                conn.client,
                "room",
                f"MCP: closed an idle connection of {conn.client} to make room "
                f"(at most {limits.per_client} per client, {limits.max_total} in all)",
            )
        self.table.gave_way.clear()

    def _refused(self, peer: Peer, why: str) -> None:
        limits = self.table.limits
        client = client_key(peer[0])
        detail = {
            "fd": "the process is near its open-file limit",
            "client": f"it holds {limits.per_client} busy connections, the most per client",
            "total": f"{limits.max_total} busy connections are open, the most in all",
        }[why]
        self._tell(
            client, why, f"MCP: refused connections of {client} with 503: {detail}; none idle"
        )

    def _tell(self, client: str, why: str, line: str) -> None:
        """One log line per client and reason."""
        if self._told.first((client, why)):
            log.warning("%s", line)
