"""Outbox delivery state that survives a crash: parts of an entry, leases released at start."""

from __future__ import annotations

from pathlib import Path

from bridge.schedule.outbox import OutboxStore
from bridge.schedule.outbox_parts import OutboxPart
from bridge.schedule.schema import transaction
from tests.masking import m
from tests.schedule.test_jobs import T0, open_db

S = 1000


def test_parts_are_recorded_one_by_one_and_survive_a_reopen(tmp_path: Path) -> None:
    outbox = OutboxStore(open_db(tmp_path / "roost.db"))
    entry = outbox.enqueue("alice", "telegram", "42", m("long text"), "job:a:1", now_ms=T0).id
    assert outbox.parts.parts(entry) == {}
    outbox.parts.mark(entry, OutboxPart(0, "sent", "1001"))
    outbox.parts.mark(entry, OutboxPart(1, "unknown"))
    again = OutboxStore(open_db(tmp_path / "roost.db"))
    assert again.parts.parts(entry) == {
        0: OutboxPart(0, "sent", "1001"),
        1: OutboxPart(1, "unknown", ""),
    }
    again.parts.mark(entry, OutboxPart(1, "sent", "1002"))  # replaces what was known
    assert again.parts.parts(entry)[1] == OutboxPart(1, "sent", "1002")


def test_parts_commit_with_their_entry_or_not_at_all(tmp_path: Path) -> None:
    outbox = OutboxStore(open_db(tmp_path / "roost.db"))
    try:
        with transaction(outbox.conn):
            entry = outbox.enqueue("alice", "telegram", "42", m("t"), "reply:7", now_ms=T0).id
            outbox.parts.put(entry, [OutboxPart(0, "draft", "900")])
            raise RuntimeError("crash before commit")
    except RuntimeError:
        pass
    assert outbox.conn.execute("SELECT COUNT(*) FROM outbox_parts").fetchone() == (0,)
    assert outbox.conn.execute("SELECT COUNT(*) FROM outbox").fetchone() == (0,)


def test_a_lease_of_a_killed_process_is_released_at_start(tmp_path: Path) -> None:
    outbox = OutboxStore(open_db(tmp_path / "roost.db"))
    outbox.enqueue("alice", "telegram", "42", m("a"), "k1", now_ms=T0)
    outbox.enqueue("alice", "telegram", "43", m("b"), "k2", now_ms=T0)
    claimed = outbox.claim(T0, 10)
    assert len(claimed) == 2
    outbox.failed(claimed[1].id, "network", T0 + S)  # backing off: not a lease
    # the process dies holding the first claim; the next one starts a second later
    restarted = OutboxStore(open_db(tmp_path / "roost.db"))
    assert restarted.claim(T0 + 2 * S, 10) == []  # leased for two minutes, backing off
    assert restarted.release_leases(T0 + 2 * S) == 1
    again = restarted.claim(T0 + 2 * S, 10)
    assert [e.key for e in again] == ["k1"] and again[0].attempts == 2
    assert restarted.release_leases(T0 + 3 * S) == 1  # claimed again by this process...
    assert restarted.delivered(again[0].id, T0 + 3 * S) is True  # ...and ended normally


def test_pruning_an_entry_forgets_its_parts(tmp_path: Path) -> None:
    outbox = OutboxStore(open_db(tmp_path / "roost.db"))
    entry = outbox.enqueue("alice", "telegram", "42", m("t"), "k", now_ms=T0).id
    outbox.parts.mark(entry, OutboxPart(0, "sent", "1"))
    (claimed,) = outbox.claim(T0, 1)
    outbox.delivered(claimed.id, T0)
    assert outbox.prune(T0 + outbox.policy.keep_delivered_ms + 1) == 1
    assert outbox.parts.parts(entry) == {}
