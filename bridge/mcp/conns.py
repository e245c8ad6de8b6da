"""Who holds `roost mcp --http`'s connections and tool calls, and who gives way when full.

`ConnTable` counts open connections in all and per client (an IPv4 address,
an IPv6 /64) and decides, for each connection the listener accepts, before
any HTTP work (as the web server's table does, `bridge.channels.web.conns`):

- refuse ("fd") when the accepted socket's descriptor number reaches the
  ceiling (the kernel hands out the lowest free one: its number is a lower
  bound of the descriptors in use), which keeps a reserve for the sandbox
  helpers, the database and the audit chain;
- at the per-client cap, the client's own longest-idle connection gives way
  (idle: no request of it is being handled, so a socket that never finished
  its head, or was answered 401, is idle); with none idle, refuse ("client");
- at the total cap, the longest-idle connection of anyone gives way; with
  none idle, refuse ("total").

So a flood of idle or half-sent sockets, token or not, never keeps a fresh
request out, and only a client with the token can hold connections busy
(an open event stream, a tool call), up to the caps. A connection given way
is cut (its `close` aborts) but stays counted until it has really gone.

`CallSlots` bounds the tool calls in flight of one bearer token: a request
carrying `tools/call` takes a slot before the SDK sees it (refused when the
token has `per_token` in flight) and gives it back when its answer is sent;
the server's own count of running calls (`running`, bounded the same way)
also covers calls whose client went away before the answer. Pure: the
clock is passed in, closing is a callable each connection brings.
"""

from __future__ import annotations

import hashlib
import resource
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from bridge.types.clients import client_key as client_key  # guard.py's name too

Refusal = Literal["fd", "client", "total"]
Peer = tuple[str, int]
FD_RESERVE = 64  # descriptors kept for everything but MCP connections


def fd_ceiling(reserve: int = FD_RESERVE) -> int:
    """The descriptor number from which a connection is refused: the soft limit less
    a reserve (half the limit when the limit is small)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 1 << 20
    return max(soft // 2, soft - reserve)


@dataclass(frozen=True, slots=True)
class McpLimits:
    max_total: int = 64  # MCP connections in all
    per_client: int = 16  # of one client address (IPv6: one /64)
    calls_per_token: int = 8  # tool calls in flight of one bearer token
    fd_ceiling: int = field(default_factory=fd_ceiling)
    retry_after_s: int = 5  # what a refusal asks the client to wait


@dataclass(eq=False, slots=True)
class Conn:
    """One accepted connection."""

    client: str
    peer: Peer
    close: Callable[[], None]  # aborts: the connection goes without waiting for its client
    opened: float
    busy: int = 0  # requests of it being handled now
    cut: bool = False  # closed by the table, not gone yet
    stalled: bool = False  # its writes are paused: its client reads none of its answers


@dataclass
class ConnTable:
    limits: McpLimits
    _clients: Counter[str] = field(default_factory=Counter)
    _idle: dict[Conn, None] = field(default_factory=dict)  # oldest idle first
    _by_peer: dict[Peer, Conn] = field(default_factory=dict)
    refused: Counter[str] = field(default_factory=Counter)  # by reason, since start
    evicted: int = 0
    gave_way: list[Conn] = field(default_factory=list)  # cut for room, until the caller reads

    @property
    def total(self) -> int:
        return len(self._by_peer)

    def of(self, client: str) -> int:
        return self._clients[client]

    def admit(self, peer: Peer, fd: int, close: Callable[[], None], now: float) -> Conn | Refusal:
        """A new connection's record, after making room; or why it must be refused."""
        client = client_key(peer[0])
        if fd >= self.limits.fd_ceiling:
            return self._refuse("fd")
        if self._clients[client] >= self.limits.per_client and not self._evict(client):
            return self._refuse("client")
        if self.total >= self.limits.max_total and not self._evict(None):
            return self._refuse("total")
        conn = Conn(client, peer, close, now)
        self._by_peer[peer] = conn
        self._clients[client] += 1
        self._idle[conn] = None
        return conn

    def shed(self) -> bool:
        """Close the longest-idle connection (the listener met a descriptor shortage)."""
        return self._evict(None)

    def at(self, peer: Peer) -> Conn | None:
        return self._by_peer.get(peer)

    def gone(self, conn: Conn) -> None:
        if self._by_peer.get(conn.peer) is not conn:
            return
        del self._by_peer[conn.peer]
        self._idle.pop(conn, None)
        self._clients[conn.client] -= 1
        if self._clients[conn.client] <= 0:
            del self._clients[conn.client]

    def busy(self, conn: Conn) -> None:
        """A request of `conn` is being handled (its head is complete)."""
        conn.busy += 1
        if not conn.stalled:
            self._idle.pop(conn, None)

    def done(self, conn: Conn) -> None:
        conn.busy = max(0, conn.busy - 1)
        if conn.busy == 0 or conn.stalled:
            self._give_way_later(conn)

    def stall(self, conn: Conn, paused: bool) -> None:
        """`conn`'s writes are paused (its client reads none of its answers: a pipelining
        client that never reads holds a request "in progress" for ever) or flow again.
        A stalled connection gives way as if idle, busy or not."""
        conn.stalled = paused
        if paused or conn.busy == 0:
            self._give_way_later(conn)
        else:
            self._idle.pop(conn, None)

    def _give_way_later(self, conn: Conn) -> None:
        if self._by_peer.get(conn.peer) is conn and not conn.cut:
            self._idle.setdefault(conn, None)  # the newest idle: the last to give way

    def _evict(self, client: str | None) -> bool:
        for conn in self._idle:
            if client is None or conn.client == client:
                self.evicted += 1
                self.gave_way.append(conn)
                conn.cut = True
                self._idle.pop(conn, None)
                conn.close()
                return True
        return False

    def _refuse(self, why: Refusal) -> Refusal:
        self.refused[why] += 1
        return why


def token_key(token: str) -> str:
    """What `CallSlots` keeps of a token: a short digest, never the token."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


@dataclass
class CallSlots:
    """Tool calls in flight: per token at the HTTP gate, and running in the server."""

    per_token: int
    asked: Counter[str] = field(default_factory=Counter)  # token digest -> requests in flight
    running: int = 0  # tool calls the server runs now, whoever waits for them

    def take(self, token: str) -> bool:
        """A slot for one request carrying `tools/call`; False when the token is full."""
        key = token_key(token)
        if max(self.asked[key], self.running) >= self.per_token:
            return False
        self.asked[key] += 1
        return True

    def give(self, token: str) -> None:
        key = token_key(token)
        self.asked[key] -= 1
        if self.asked[key] <= 0:
            del self.asked[key]

    def start(self) -> bool:
        """A tool call begins to run; False when `per_token` already run (a client that
        left before its answers came could otherwise start calls without end)."""
        if self.running >= self.per_token:
            return False
        self.running += 1
        return True

    def end(self) -> None:
        self.running = max(0, self.running - 1)
