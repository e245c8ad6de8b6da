"""A connection whose client reads none of its answers gives way, busy or not.

The attacker pass of session 33: 64 sockets, no token, each pipelining
thousands of requests and never reading the 401s. Their answers filled the
send buffers, uvicorn's `send` waited for room for ever inside a request,
so every connection stayed "busy", none could give way, and every client,
token or not, got 503 until the attacker let go. A connection whose writes
are paused (asyncio's flow control: `pause_writing`) now counts as idle for
the table, so it is the one cut to make room; once its writes flow again it
is busy as before. (The real-process attack, `roost mcp` and 64 such
sockets, was rerun by hand: a client with the token got 200 throughout.)
"""

from __future__ import annotations

import asyncio

from bridge.mcp.conns import Conn, ConnTable, McpLimits
from bridge.mcp.guard import _Guarded, _Link


def table_of(total: int) -> tuple[ConnTable, list[Conn], list[str]]:
    table = ConnTable(McpLimits(max_total=total, per_client=total, fd_ceiling=1 << 20))
    closed: list[str] = []
    conns = []
    for n in range(total):
        made = table.admit((f"127.0.0.{n + 2}", 1000 + n), 10, lambda n=n: closed.append(n), 0.0)
        assert isinstance(made, Conn)
        table.busy(made)  # a request in hand, its answer waiting to be written
        conns.append(made)
    return table, conns, closed


def test_a_busy_connection_whose_writes_are_paused_gives_way() -> None:
    table, conns, closed = table_of(2)
    assert table.admit(("127.0.0.9", 1), 10, lambda: None, 1.0) == "total"  # all busy
    table.stall(conns[1], True)  # its client reads nothing
    newcomer = table.admit(("127.0.0.9", 2), 10, lambda: None, 1.0)
    assert isinstance(newcomer, Conn)
    assert closed == [1] and conns[1].cut


def test_writes_that_flow_again_make_it_busy_again() -> None:
    table, conns, closed = table_of(1)
    table.stall(conns[0], True)
    table.stall(conns[0], False)
    assert table.admit(("127.0.0.9", 1), 10, lambda: None, 1.0) == "total"
    assert closed == []
    table.done(conns[0])  # its request ended: idle
    assert isinstance(table.admit(("127.0.0.9", 2), 10, lambda: None, 1.0), Conn)


def test_the_guarded_protocol_tells_the_table_when_writes_pause() -> None:
    table, conns, _ = table_of(1)

    class Inner(asyncio.Protocol):
        paused = 0

        def pause_writing(self) -> None:
            self.paused += 1

        def resume_writing(self) -> None:
            self.paused -= 1

    inner = Inner()
    guarded = _Guarded(inner, table, conns[0], _Link())
    guarded.pause_writing()
    assert conns[0].stalled and inner.paused == 1
    guarded.resume_writing()
    assert not conns[0].stalled and inner.paused == 0
