"""`roost mcp --http`'s listener: roost's own accept loop in front of uvicorn.

`Guard.accepting` accepts in a loop of its own and asks `ConnTable`
(`bridge.mcp.conns`) about each connection before uvicorn sees a byte. A
refused one gets a short `503` with `Retry-After` (its body a JSON-RPC error
the SDK's client shows as is), its request read and dropped until the client
closes (a few at once, two seconds at most; closed at once when descriptors
are short); an admitted one is handed to uvicorn's HTTP protocol through a
thin protocol that tells the table when it goes. When `accept()` itself
fails for want of descriptors (EMFILE, ENFILE) the longest-idle connection
is closed to make room. The ASGI wrapper `Guard.app` marks a connection
busy while a request of it is handled. One log line per client and reason
(refused, or cut for room), never a traceback per connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import socket
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from bridge.mcp.conns import Conn, ConnTable, McpLimits, Peer, client_key

log = logging.getLogger("roost.mcp")

SHORTAGE = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_PAUSE_S = 0.1  # after a descriptor shortage with nothing idle to close
TOLD_MAX = 4096  # (client, reason) pairs remembered as told, the oldest forgotten
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


def refuse(conn: socket.socket, answer: bytes) -> None:
    """A short 503 and close at once (when descriptors are short)."""
    with contextlib.suppress(OSError):
        conn.setblocking(False)
        conn.recv(65536)  # what already arrived: closing over unread bytes would reset
    with contextlib.suppress(OSError):
        conn.send(answer)
    conn.close()


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


class _Link:
    """One admitted connection's transport once it exists; a cut asked for before
    that happens as soon as it does."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.cut = False

    def abort(self) -> None:  # not close(): that waits for a client that may never read
        self.cut = True
        if self.transport is not None:
            self.transport.abort()


class _Guarded(asyncio.Protocol):
    """uvicorn's protocol for one connection, and the table told when it goes."""

    def __init__(self, inner: asyncio.Protocol, table: ConnTable, conn: Conn, link: _Link) -> None:
        self._inner, self._table, self._conn, self._link = inner, table, conn, link

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._link.transport = transport
        self._inner.connection_made(transport)
        if self._link.cut:  # cut while it was being set up
            transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._table.gone(self._conn)
        self._inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._table.stall(self._conn, True)  # a client that reads nothing: it may give way
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._table.stall(self._conn, False)
        self._inner.resume_writing()


class Guard:
    """The connection table of one MCP HTTP server, its accept loop and its ASGI wrapper."""

    def __init__(self, limits: McpLimits) -> None:
        self.table = ConnTable(limits)
        self._busy = busy_answer(limits)
        self._shortage = 0
        self._told: OrderedDict[tuple[str, str], None] = OrderedDict()
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
        sock.setblocking(False)
        while True:
            try:
                conn, address = await loop.sock_accept(sock)
            except OSError as exc:
                if exc.errno not in SHORTAGE:
                    raise
                self._short(exc)
                if not self.table.shed():
                    await asyncio.sleep(ACCEPT_PAUSE_S)
                self._gave_way()
                await asyncio.sleep(0)  # the cut connection's descriptor closes first
                continue
            if self._shortage:
                log.warning("MCP: accepting again after %d refused accepts", self._shortage)
                self._shortage = 0
            self._admit(loop, conn, peer_of(address), protocol)
            # sock_accept does not yield while connections wait: let the loop close the
            # ones that gave way (their descriptors) and start the admitted ones
            await asyncio.sleep(0)

    def _short(self, exc: OSError) -> None:
        if not self._shortage:
            log.warning(
                "MCP: cannot accept connections (%s); closing idle ones to make room",
                exc.strerror,
            )
        self._shortage += 1

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
        task = loop.create_task(loop.connect_accepted_socket(lambda: guarded, sock))
        task.add_done_callback(lambda done: self._connected(done, made, sock))

    def _connected(self, done: asyncio.Task[Any], conn: Conn, sock: socket.socket) -> None:
        if done.cancelled() or done.exception() is not None:
            self.table.gone(conn)
            sock.close()

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
        if (client, why) in self._told:
            return
        self._told[(client, why)] = None
        if len(self._told) > TOLD_MAX:
            self._told.popitem(last=False)
        log.warning("%s", line)
