"""Who holds a server's connections, and which one gives way when it is full (pure).

The table both of roost's own accept loops ask about each connection they
accept, before any HTTP work: the web server's (`bridge.channels.web.conns`)
and `roost mcp --http`'s (`bridge.mcp.conns`), each with its own record and
limits on top. It counts open connections in all and per client
(`client_key`: an IPv4 address, an IPv6 /64) and decides:

- refuse ("fd") when the accepted socket's descriptor number reaches the
  ceiling (the kernel hands out the lowest free one: its number is a lower
  bound of the descriptors in use), which keeps a reserve for the rest;
- at the per-client cap, the client's own longest-idle connection gives way;
  with none idle, refuse ("client");
- at the total cap, the longest-idle connection of anyone gives way; with
  none idle, refuse ("total").

A connection is idle while no request of it is being handled (`busy`/`done`:
a socket that never finished its head is idle from its first byte), and also
while its writes are paused (`stall`: a client that pipelines requests and
reads none of the answers would otherwise hold a request "in progress" for
ever); the longest idle gives way first. A connection given way is cut (its
`close` aborts) and named in `gave_way` for the caller to log, but stays
counted until it has really gone (`gone`), so the table never forgets a live
descriptor. Pure: no I/O, the clock and closing are passed in.

A request whose body must be read before it can be authenticated (a
webhook's signature covers its body) reads it inside `unproven()`: the
server's hook (`give_way_while`, set per request) makes its connection
give way as if idle meanwhile, so bodies that never arrive hold no seat
against newcomers (without a hook, as outside a guarded server, nothing
happens).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

from bridge.types.clients import client_key

Refusal = Literal["fd", "client", "total"]
GiveWay = Callable[[], AbstractContextManager[None]]

# the running request's hook (each request is handled in a task of its own)
_give_way: ContextVar[GiveWay | None] = ContextVar("roost_give_way", default=None)


def give_way_while(hook: GiveWay | None) -> Token[GiveWay | None]:
    """The server names how the running request's connection gives way (`reset` after)."""
    return _give_way.set(hook)


def reset_give_way(token: Token[GiveWay | None]) -> None:
    _give_way.reset(token)


def unproven() -> AbstractContextManager[None]:
    """Around reading a body before the request could be authenticated: its connection
    gives way as if idle meanwhile (the longest idle first), so a client that never
    sends the body it announced holds no seat against anyone."""
    hook = _give_way.get()
    return hook() if hook is not None else nullcontext()


class Caps(Protocol):
    """The limits the table enforces (each server's limits have more)."""

    @property
    def max_total(self) -> int: ...  # connections in all

    @property
    def per_client(self) -> int: ...  # of one client (IPv6: one /64)

    @property
    def fd_ceiling(self) -> int: ...  # refuse a connection whose descriptor reaches this


@dataclass(eq=False, slots=True)
class Seat:
    """One accepted connection, as the table sees it."""

    client: str
    close: Callable[[], None]  # aborts: the connection goes without waiting for its client
    opened: float
    busy: int = 0  # requests of it being handled now
    cut: bool = False  # closed by the table, not gone yet
    stalled: bool = False  # its writes are paused: its client reads none of its answers


C = TypeVar("C", bound=Seat)
L = TypeVar("L", bound=Caps)


@dataclass
class SeatTable(Generic[C, L]):
    limits: L
    _clients: Counter[str] = field(default_factory=Counter)
    _idle: dict[C, None] = field(default_factory=dict)  # oldest idle first
    _open: dict[C, None] = field(default_factory=dict)
    refused: Counter[str] = field(default_factory=Counter)  # by reason, since start
    evicted: int = 0
    gave_way: list[C] = field(default_factory=list)  # cut for room, until the caller reads

    @property
    def total(self) -> int:
        return len(self._open)

    def of(self, client: str) -> int:
        return self._clients[client]

    def all(self) -> list[C]:
        return list(self._open)

    def seat(self, host: str, fd: int, make: Callable[[str], C]) -> C | Refusal:
        """A new connection's record (`make(client)`), after making room; or why it must
        be refused."""
        client = client_key(host)
        if fd >= self.limits.fd_ceiling:
            return self._refuse("fd")
        if self._clients[client] >= self.limits.per_client and not self._evict(client):
            return self._refuse("client")
        if len(self._open) >= self.limits.max_total and not self._evict(None):
            return self._refuse("total")
        conn = make(client)
        self._open[conn] = None
        self._clients[client] += 1
        self._idle[conn] = None
        return conn

    def shed(self) -> bool:
        """Close the longest-idle connection (the listener met a descriptor shortage)."""
        return self._evict(None)

    def gone(self, conn: C) -> None:
        """`conn` has really closed (its transport's `connection_lost`)."""
        if conn not in self._open:
            return
        del self._open[conn]
        self._idle.pop(conn, None)
        self._clients[conn.client] -= 1
        if self._clients[conn.client] <= 0:
            del self._clients[conn.client]

    def handling(self, conn: C) -> None:
        """A request of `conn` is being handled (its head is complete)."""
        conn.busy += 1
        if not conn.stalled:
            self._idle.pop(conn, None)

    def handled(self, conn: C) -> None:
        conn.busy = max(0, conn.busy - 1)
        if conn.busy == 0 or conn.stalled:
            self._give_way_later(conn)

    def stall(self, conn: C, paused: bool) -> None:
        """`conn`'s writes are paused (its client reads none of its answers) or flow
        again. A stalled connection gives way as if idle, busy or not."""
        conn.stalled = paused
        if paused or conn.busy == 0:
            self._give_way_later(conn)
        else:
            self._idle.pop(conn, None)

    def _give_way_later(self, conn: C) -> None:
        if conn in self._open and not conn.cut:
            self._idle.setdefault(conn, None)  # the newest idle: the last to give way

    def _evict(self, client: str | None) -> bool:
        for conn in self._idle:
            if client is None or conn.client == client:
                self.evicted += 1
                self.gave_way.append(conn)
                self._cut(conn)
                return True
        return False

    def _cut(self, conn: C) -> None:
        conn.cut = True
        self._idle.pop(conn, None)
        conn.close()

    def _refuse(self, why: Refusal) -> Refusal:
        self.refused[why] += 1
        return why
