"""The web server's connection table: the shared one, plus the web's request timeouts.

`ConnTable` is the shared table (`bridge.types.conn_table`): caps in all and
per client (an IPv4 address, an IPv6 /64: one machine easily holds a whole
/64), a descriptor ceiling that keeps a reserve for Telegram, SQLite, the
audit chain and the sandbox, and the longest-idle connection giving way at a
cap (a connection is idle when no request of it is being handled: a
slowloris socket that never finished its head is idle from its first byte).
So a flood of half-sent heads or idle sockets can never keep a fresh request
(`/healthz`, the page) out, and one client can only push out its own
connections once it is at its cap.

On top, the web's own timeouts: requests in progress are tracked
(`busy`/`done`, with their body) and `overdue(now)` names those whose body
stalls (`body_idle_s` without a byte) or runs past `body_timeout_s`, and
those holding answers their client does not read (`send_idle_s` with unsent
bytes and none of them leaving: a client that pipelines requests and never
reads). A connection given way or timed out is cut (its `close` aborts:
unsent bytes are dropped) but stays counted until it has really closed
(`gone`, from the transport's `connection_lost`). Pure: the clock is passed
in, closing and the unsent byte count are callables each connection brings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from bridge.types.clients import client_key as client_key  # the tests' name too
from bridge.types.conn_table import Refusal, Seat, SeatTable

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
class Conn(Seat):
    """One accepted connection."""

    unsent: Callable[[], int] = lambda: 0  # bytes of answers not yet handed to the kernel
    body: Body | None = None  # the body of the request being read, until it is complete
    body_started: float = 0.0
    body_seen: int = 0
    body_moved: float = 0.0
    unsent_seen: int = 0
    send_moved: float = 0.0  # when its unsent bytes last went down (or there were none)
    pipelined: int = 0  # requests that arrived before the answer to the one ahead of them


@dataclass
class ConnTable(SeatTable[Conn, ConnLimits]):
    timed_out: int = 0

    def admit(
        self,
        host: str,
        fd: int,
        close: Callable[[], None],
        now: float,
        unsent: Callable[[], int] = lambda: 0,
    ) -> Conn | Refusal:
        """A new connection's record, after making room; or why it must be refused."""
        return self.seat(
            host, fd, lambda client: Conn(client, close, now, unsent=unsent, send_moved=now)
        )

    def busy(self, conn: Conn, body: Body | None, now: float) -> None:
        """A request of `conn` is being handled (its head is complete)."""
        self.handling(conn)
        if body is not None and not body.is_eof():
            conn.body, conn.body_started, conn.body_moved = body, now, now
            conn.body_seen = body.total_bytes

    def done(self, conn: Conn) -> None:
        conn.body = None
        self.handled(conn)

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
