"""Who holds the web server's connections, and which one gives way when it is full.

`ConnTable` counts open connections in all and per client (an IPv4 address,
an IPv6 /64: one machine easily holds a whole /64) and decides, for each
connection the listener accepts, before any HTTP work:

- `refuse` ("fd") when the accepted socket's descriptor number reaches the
  ceiling (the descriptors below it are all in use: the kernel hands out the
  lowest free one, so its number is a free lower bound of the count), which
  keeps a reserve for Telegram, SQLite, the audit chain and the sandbox;
- at the per-client cap, the client's own longest-idle connection gives way
  (a connection is idle when no request of it is being handled: a slowloris
  socket that never finished its head is idle from its first byte); with
  none idle, `refuse` ("client");
- at the total cap, the longest-idle connection of anyone gives way; with
  none idle, `refuse` ("total").

So a flood of half-sent heads or idle sockets can never keep a fresh request
(`/healthz`, the page) out, and one client can only push out its own
connections once it is at its cap. Requests in progress are tracked
(`busy`/`done`) and `overdue(now)` names those whose body stalls
(`body_idle_s` without a byte) or runs past `body_timeout_s`, and those
holding answers their client does not read (`send_idle_s` with unsent bytes
and none of them leaving: a client that pipelines requests and never reads).
A connection given way or timed out is cut (its `close` aborts: unsent bytes
are dropped) but stays counted until it has really closed (`gone`, from the
transport's `connection_lost`), so the table never forgets a live descriptor.
Pure: the clock is passed in, closing and the unsent byte count are callables
each connection brings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from bridge.types.clients import client_key as client_key  # the tests' name too

Refusal = Literal["fd", "client", "total"]
Cut = Literal["body stalled", "body too slow", "answers not read", "room"]


@dataclass(frozen=True, slots=True)
class ConnLimits:
    max_total: int  # web connections in all
    per_client: int  # of one client address (IPv6: one /64)
    fd_ceiling: int  # refuse a connection whose descriptor number reaches this
    header_timeout_s: float = 10.0  # a request head must be complete within this
    body_timeout_s: float = 300.0  # a request body must be complete within this
    body_idle_s: float = 20.0  # ... with no pause longer than this
    send_idle_s: float = 30.0  # answers waiting to be sent, none leaving: cut after this
    streams_per_token: int = 8  # open event streams of one page token
    streams_per_tenant: int = 16  # ... and of one tenant, whatever its tokens


# for a channel made without a budget (tests, tools): generous, and no descriptor check
UNBUDGETED = ConnLimits(max_total=1024, per_client=256, fd_ceiling=1 << 30)


class Body(Protocol):
    """What `overdue` reads of a request's body (aiohttp's StreamReader has both)."""

    def is_eof(self) -> bool: ...

    @property
    def total_bytes(self) -> int: ...


@dataclass(eq=False, slots=True)
class Conn:
    """One accepted connection."""

    client: str
    close: Callable[[], None]  # aborts: the connection goes without waiting for its client
    opened: float
    unsent: Callable[[], int] = lambda: 0  # bytes of answers not yet handed to the kernel
    busy: int = 0  # requests of it being handled now
    body: Body | None = None  # the body of the request being read, until it is complete
    body_started: float = 0.0
    body_seen: int = 0
    body_moved: float = 0.0
    unsent_seen: int = 0
    send_moved: float = 0.0  # when its unsent bytes last went down (or there were none)
    cut: bool = False  # closed by the table, not gone yet


@dataclass
class ConnTable:
    limits: ConnLimits
    _clients: Counter[str] = field(default_factory=Counter)
    _idle: dict[Conn, None] = field(default_factory=dict)  # oldest idle first
    _open: set[Conn] = field(default_factory=set)
    refused: Counter[str] = field(default_factory=Counter)  # by reason, since start
    evicted: int = 0
    timed_out: int = 0
    gave_way: list[Conn] = field(default_factory=list)  # cut for room, until the caller reads

    @property
    def total(self) -> int:
        return len(self._open)

    def of(self, client: str) -> int:
        return self._clients[client]

    def admit(
        self,
        host: str,
        fd: int,
        close: Callable[[], None],
        now: float,
        unsent: Callable[[], int] = lambda: 0,
    ) -> Conn | Refusal:
        """A new connection's record, after making room; or why it must be refused."""
        client = client_key(host)
        if fd >= self.limits.fd_ceiling:
            return self._refuse("fd")
        if self._clients[client] >= self.limits.per_client and not self._evict(client):
            return self._refuse("client")
        if len(self._open) >= self.limits.max_total and not self._evict(None):
            return self._refuse("total")
        conn = Conn(client, close, now, unsent, send_moved=now)
        self._open.add(conn)
        self._clients[client] += 1
        self._idle[conn] = None
        return conn

    def shed(self) -> bool:
        """Close the longest-idle connection (the listener met a descriptor shortage)."""
        return self._evict(None)

    def gone(self, conn: Conn) -> None:
        if conn not in self._open:
            return
        self._open.discard(conn)
        self._idle.pop(conn, None)
        self._clients[conn.client] -= 1
        if self._clients[conn.client] <= 0:
            del self._clients[conn.client]

    def busy(self, conn: Conn, body: Body | None, now: float) -> None:
        """A request of `conn` is being handled (its head is complete)."""
        conn.busy += 1
        self._idle.pop(conn, None)
        if body is not None and not body.is_eof():
            conn.body, conn.body_started, conn.body_moved = body, now, now
            conn.body_seen = body.total_bytes

    def done(self, conn: Conn) -> None:
        conn.busy = max(0, conn.busy - 1)
        conn.body = None
        if conn.busy == 0 and conn in self._open and not conn.cut:
            self._idle[conn] = None  # the newest idle: the last to give way

    def overdue(self, now: float) -> list[tuple[Conn, Cut]]:
        """Connections whose request body stalls or takes too long, or whose answers
        wait unread; what moved since the last look is noted."""
        late: list[tuple[Conn, Cut]] = []
        for conn in self._open:
            if conn.cut:
                continue
            why = self._sending(conn, now) or self._reading(conn, now)
            if why is not None:
                late.append((conn, why))
        return late

    def _sending(self, conn: Conn, now: float) -> Cut | None:
        unsent = conn.unsent()
        if not unsent or not conn.unsent_seen or unsent < conn.unsent_seen:
            conn.send_moved = now  # none waiting, the first seen, or some of them went
        conn.unsent_seen = unsent
        if unsent and now - conn.send_moved >= self.limits.send_idle_s:
            return "answers not read"
        return None

    def _reading(self, conn: Conn, now: float) -> Cut | None:
        body = conn.body
        if body is None:
            return None
        if body.is_eof():
            conn.body = None
            return None
        if body.total_bytes != conn.body_seen:
            conn.body_seen, conn.body_moved = body.total_bytes, now
        if now - conn.body_moved >= self.limits.body_idle_s:
            return "body stalled"
        if now - conn.body_started >= self.limits.body_timeout_s:
            return "body too slow"
        return None

    def timeout(self, conn: Conn) -> None:
        """Cut an overdue connection; it stays counted until it has gone."""
        self.timed_out += 1
        conn.body = None
        self._cut(conn)

    def all(self) -> list[Conn]:
        return list(self._open)

    def _evict(self, client: str | None) -> bool:
        for conn in self._idle:
            if client is None or conn.client == client:
                self.evicted += 1
                self.gave_way.append(conn)
                self._cut(conn)
                return True
        return False

    def _cut(self, conn: Conn) -> None:
        conn.cut = True
        self._idle.pop(conn, None)
        conn.close()

    def _refuse(self, why: Refusal) -> Refusal:
        self.refused[why] += 1
        return why
