"""The web's connection and stream accounting, the descriptor budget and the log flood limit.

Pure pieces, driven with a fake clock: who gives way when the table is full
(`web_conns.ConnTable`), which bodies are overdue, the stream slots per token
and tenant (`web_streams`), the budget computed from RLIMIT_NOFILE
(`app.descriptors`) and the log limiter (`logging_setup.LogFlood`).
"""

from __future__ import annotations

import logging

import pytest

from bridge.app.descriptors import RESERVE_MIN, budget
from bridge.app.logging_setup import LogFlood, kind_of
from bridge.channels.web.conns import ConnLimits, ConnTable, client_key
from bridge.channels.web.streams import StreamSlots
from bridge.core.config_sections import WebSettings
from tests.conftest import Clock

LIMITS = ConnLimits(max_total=4, per_client=3, fd_ceiling=100, body_idle_s=5, body_timeout_s=30)


class Closed:
    def __init__(self) -> None:
        self.closed: list[str] = []

    def closer(self, name: str):  # type: ignore[no-untyped-def]
        return lambda: self.closed.append(name)


class FakeBody:
    def __init__(self) -> None:
        self.total_bytes = 0
        self.eof = False

    def is_eof(self) -> bool:
        return self.eof


@pytest.mark.parametrize(
    ("host", "key"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("/run/roost.sock", "/run/roost.sock"),
    ],
)
def test_clients_are_counted_by_address_and_ipv6_by_its_64(host: str, key: str) -> None:
    assert client_key(host) == key


def test_a_full_table_closes_the_longest_idle_connection_for_a_new_one() -> None:
    table, seen = ConnTable(LIMITS), Closed()
    conns = [table.admit(f"10.0.0.{i}", 10 + i, seen.closer(f"c{i}"), float(i)) for i in range(4)]
    assert all(not isinstance(c, str) for c in conns)
    table.busy(conns[0], None, 5.0)  # c0 is answering something: it stays
    fresh = table.admit("10.0.0.9", 20, seen.closer("new"), 6.0)
    assert not isinstance(fresh, str)
    assert seen.closed == ["c1"] and table.evicted == 1
    assert table.total == 5  # c1 was cut: counted until its socket has really closed
    table.gone(conns[1])  # (its transport's connection_lost)
    assert table.total == 4
    for conn in [*conns[2:], fresh]:
        table.busy(conn, None, 7.0)  # now everything is busy
    assert table.admit("10.0.0.10", 21, seen.closer("x"), 8.0) == "total"
    table.done(conns[0])  # c0 finished: idle again, so it gives way next
    assert not isinstance(table.admit("10.0.0.10", 21, seen.closer("y"), 9.0), str)
    assert seen.closed == ["c1", "c0"]


def test_one_client_at_its_cap_pushes_out_only_its_own_connections() -> None:
    table, seen = ConnTable(ConnLimits(max_total=10, per_client=2, fd_ceiling=100)), Closed()
    other = table.admit("192.0.2.1", 10, seen.closer("other"), 0.0)
    a1 = table.admit("198.51.100.1", 11, seen.closer("a1"), 1.0)
    a2 = table.admit("198.51.100.1", 12, seen.closer("a2"), 2.0)
    assert not isinstance(table.admit("198.51.100.1", 13, seen.closer("a3"), 3.0), str)
    assert seen.closed == ["a1"]  # its own oldest idle one, not the older `other`
    assert not isinstance(a1, str)
    table.gone(a1)
    assert table.of("198.51.100.1") == 2 and not isinstance(other, str)
    for conn in table.all():
        table.busy(conn, None, 4.0)
    assert table.admit("198.51.100.1", 14, seen.closer("a4"), 5.0) == "client"
    assert table.refused["client"] == 1 and not isinstance(a2, str)


def test_a_cut_connection_counts_until_it_has_gone_and_gives_way_once() -> None:
    table, seen = ConnTable(ConnLimits(max_total=10, per_client=1, fd_ceiling=100)), Closed()
    first = table.admit("198.51.100.1", 10, seen.closer("first"), 0.0)
    second = table.admit("198.51.100.1", 11, seen.closer("second"), 1.0)
    assert not isinstance(first, str) and not isinstance(second, str)
    assert seen.closed == ["first"] and table.of("198.51.100.1") == 2
    table.done(first)  # a request of it ends after the cut: it does not become idle again
    third = table.admit("198.51.100.1", 12, seen.closer("third"), 2.0)
    assert seen.closed == ["first", "second"] and not isinstance(third, str)
    table.gone(first)
    table.gone(second)
    assert table.of("198.51.100.1") == 1 and table.evicted == 2


def test_answers_left_unread_for_send_idle_s_are_overdue() -> None:
    limits = ConnLimits(max_total=10, per_client=5, fd_ceiling=100, send_idle_s=3)
    table, seen = ConnTable(limits), Closed()
    waiting = {"stuck": 0, "slow": 0}
    stuck = table.admit("10.0.0.1", 10, seen.closer("stuck"), 0.0, lambda: waiting["stuck"])
    slow = table.admit("10.0.0.2", 11, seen.closer("slow"), 0.0, lambda: waiting["slow"])
    assert not isinstance(stuck, str) and not isinstance(slow, str)
    waiting["stuck"] = waiting["slow"] = 500_000
    assert table.overdue(1.0) == []
    for second in (2.0, 3.0):
        waiting["slow"] -= 1000  # its client reads, slowly
        assert table.overdue(second) == []
    waiting["slow"] += 64_000  # more answers, read in time
    assert table.overdue(4.0) == [(stuck, "answers not read")]  # none left for 3 s
    table.timeout(stuck)
    assert seen.closed == ["stuck"] and table.overdue(9.0) == [(slow, "answers not read")]


def test_a_descriptor_past_the_ceiling_is_refused_before_anything() -> None:
    table, seen = ConnTable(LIMITS), Closed()
    assert table.admit("10.0.0.1", 100, seen.closer("c"), 0.0) == "fd"
    assert table.total == 0 and table.refused["fd"] == 1 and not seen.closed


def test_a_closed_connection_frees_its_place_once() -> None:
    table, seen = ConnTable(LIMITS), Closed()
    conn = table.admit("10.0.0.1", 10, seen.closer("c"), 0.0)
    assert not isinstance(conn, str)
    table.gone(conn)
    table.gone(conn)
    assert table.total == 0 and table.of("10.0.0.1") == 0


def test_a_stalled_or_late_body_is_overdue_and_a_moving_one_is_not() -> None:
    table, seen = ConnTable(LIMITS), Closed()
    slow, moving = FakeBody(), FakeBody()
    a = table.admit("10.0.0.1", 10, seen.closer("stalled"), 0.0)
    b = table.admit("10.0.0.2", 11, seen.closer("moving"), 0.0)
    assert not isinstance(a, str) and not isinstance(b, str)
    table.busy(a, slow, 0.0)
    table.busy(b, moving, 0.0)
    for second in range(1, 5):
        moving.total_bytes += 10
        assert table.overdue(float(second)) == []
    moving.total_bytes += 10
    assert table.overdue(5.0) == [(a, "body stalled")]  # no byte for body_idle_s
    table.timeout(a)
    assert seen.closed == ["stalled"] and table.timed_out == 1
    for second in range(6, 30):
        moving.total_bytes += 1
        assert table.overdue(float(second)) == []
    moving.total_bytes += 1
    assert table.overdue(30.0) == [(b, "body too slow")]  # unfinished at body_timeout_s
    moving.eof = True
    assert table.overdue(31.0) == []


def test_stream_slots_per_token_and_per_tenant_and_revocation() -> None:
    slots, ended = StreamSlots(per_token=2, per_tenant=3), []
    a1 = slots.open("tok-a", "alice", lambda: ended.append("a1"))
    a2 = slots.open("tok-a", "alice")
    assert a1 is not None and a2 is not None
    assert slots.open("tok-a", "alice") is None  # the token's fill
    b1 = slots.open("tok-b", "alice")
    assert b1 is not None and slots.open("tok-c", "alice") is None  # the tenant's fill
    assert slots.open("tok-x", "bob") is not None and slots.refused == 2
    slots.release(a2)
    assert slots.open("tok-a", "alice") is not None
    assert slots.keep({"tok-b", "tok-x"}) == 2  # tok-a went away in a reload
    assert ended == ["a1"] and a1.ended.is_set() and not b1.ended.is_set()
    assert slots.count("alice") == 1
    slots.close_all()
    assert b1.ended.is_set() and slots.count("alice") == slots.count("bob") == 0


def test_shutdown_ends_the_streams_but_leaves_the_turns_answering_to_end_answered() -> None:
    """`close_all` at shutdown: an event stream or an attached follower is ended (its
    closer cuts it); a request answering a turn of its own (`POST /api/chat`, its
    stream, an edit) is left to end answered once the drain has stopped its turn (a
    typed /stop that came during the drain was cut here with its answer)."""
    slots, cut = StreamSlots(per_token=4, per_tenant=4), []
    events = slots.open("tok-a", "alice")
    follower = slots.open("tok-a", "alice", lambda: cut.append("follower"))
    asked = slots.open("tok-a", "alice", lambda: cut.append("asked"), False, own_turn=True)
    streamed = slots.open("tok-a", "alice", lambda: cut.append("streamed"), own_turn=True)
    assert None not in (events, follower, asked, streamed)
    slots.close_all()
    assert events is not None and events.ended.is_set()
    assert cut == ["follower"]
    assert asked is not None and streamed is not None
    assert not asked.ended.is_set() and not streamed.ended.is_set()
    slots.release(streamed)
    slots.release(asked)
    assert slots.count("alice") == 0
    assert slots.keep(set()) == 0  # nothing left open


@pytest.mark.parametrize("limit", [64, 256, 1024, 4096, 65536])
def test_the_budget_keeps_a_reserve_below_the_descriptor_limit(limit: int) -> None:
    in_use = 20
    found = budget(limit, in_use, WebSettings())
    web = found.limits
    assert found.reserve >= RESERVE_MIN and found.reserve >= limit // 4
    assert web.fd_ceiling <= limit - found.reserve
    # every web connection at two descriptors still leaves the reserve untouched
    assert in_use + 2 * web.max_total <= web.fd_ceiling or web.max_total == 4
    assert web.max_total >= 4 and web.per_client <= web.max_total
    assert "descriptor limit" in found.describe()


def test_the_operator_may_set_the_connection_caps() -> None:
    web = WebSettings(max_connections=50, max_connections_per_client=5, streams_per_token=3)
    found = budget(4096, 30, web).limits
    assert (found.max_total, found.per_client, found.streams_per_token) == (50, 5, 3)


def record(msg: str, *args: object, name: str = "x", exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            import sys

            info = sys.exc_info()
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args, info)


def test_log_lines_of_one_kind_are_held_back_and_counted() -> None:
    clock, said = Clock(0.0), []
    flood = LogFlood(interval_s=10, burst=3, total=50, clock=clock)
    flood.emit = lambda r: said.append(r.getMessage())
    passed = [flood.filter(record("accept failed on fd %d", fd, exc=True)) for fd in range(1000)]
    assert passed.count(True) == 3  # numbers in the message do not make a new kind
    assert flood.filter(record("another kind"))
    clock.advance(10)
    assert flood.filter(record("accept failed on fd %d", 5, exc=True))
    assert said == ["... 997 more like this in the last 10s: accept failed on fd %d (OSError)"]


def test_all_kinds_together_are_capped_too() -> None:
    clock, said = Clock(0.0), []
    flood = LogFlood(interval_s=10, burst=3, total=20, clock=clock)
    flood.emit = lambda r: said.append(r.getMessage())
    passed = sum(flood.filter(record(f"kind {'x' * n}")) for n in range(500))
    assert passed == 20
    flood.flush()
    assert len(said) == 4 and said[-1] == "... and 477 more log lines held back"


def test_the_kind_ignores_addresses_and_numbers() -> None:
    one = record("Exception in callback <Server 0x7f77a02e4 fd=18>")
    two = record("Exception in callback <Server 0x7f11b0000 fd=931>")
    assert kind_of(one) == kind_of(two)
    assert kind_of(one) != kind_of(record("Exception in callback", name="y"))
