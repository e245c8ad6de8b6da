"""`roost mcp --http`'s connection table, and who gives way when full; its tool-call slots.

`ConnTable` is the shared table (`bridge.types.conn_table`: the caps in all
and per client, the descriptor ceiling, the longest-idle connection giving
way, a write-paused one counting as idle) with MCP's record: a connection is
found by its peer address (`at`), which is how `Guard.app` marks the
connection of each request busy. Idle there means no request of it is being
handled (a socket that never finished its head, or was answered 401, is
idle) or its writes are paused (a client that pipelines requests and reads
none of the answers: session 33's attack). So a flood of idle, half-sent or
never-reading sockets, token or not, never keeps a fresh request out, and
only a client with the token that reads its answers can hold connections
busy (an open event stream, a tool call), up to the caps.

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

from bridge.types.clients import client_key as client_key  # guard.py's name too
from bridge.types.conn_table import Refusal, Seat, SeatTable

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
class Conn(Seat):
    """One accepted connection."""

    peer: Peer = field(kw_only=True)


@dataclass
class ConnTable(SeatTable[Conn, McpLimits]):
    _by_peer: dict[Peer, Conn] = field(default_factory=dict)

    def admit(self, peer: Peer, fd: int, close: Callable[[], None], now: float) -> Conn | Refusal:
        """A new connection's record, after making room; or why it must be refused."""
        made = self.seat(peer[0], fd, lambda client: Conn(client, close, now, peer=peer))
        if not isinstance(made, str):
            self._by_peer[peer] = made
        return made

    def at(self, peer: Peer) -> Conn | None:
        return self._by_peer.get(peer)

    def gone(self, conn: Conn) -> None:
        if self._by_peer.get(conn.peer) is conn:
            del self._by_peer[conn.peer]
        super().gone(conn)

    def busy(self, conn: Conn) -> None:
        """A request of `conn` is being handled (its head is complete)."""
        self.handling(conn)

    def done(self, conn: Conn) -> None:
        self.handled(conn)


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
