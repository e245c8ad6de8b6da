"""The outbox (`bridge.schedule.outbox`) on both backends: idempotency, leases, backoff,
dead letters, parts; on PostgreSQL two instances' claims never overlap (SKIP LOCKED)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from bridge.schedule.outbox import OutboxPolicy, OutboxStore, backoff_ms
from bridge.schedule.outbox_parts import OutboxPart
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from tests.masking import m
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced

T0 = 1_700_000_000_000
S = 1000
HOUR = 3600 * S
DAY = 24 * HOUR


@pytest.fixture
def outbox(db: Database) -> OutboxStore:
    return OutboxStore(db)


async def put(
    outbox: OutboxStore, key: str = "k", chat: str = "42", tenant: str = "alice", at: int = T0
) -> int:
    return (await outbox.enqueue(tenant, "telegram", chat, m(f"text of {key}"), key, now_ms=at)).id


async def deliver_all(outbox: OutboxStore, now: int) -> list[str]:
    """One delivery pass that always succeeds; the keys that went out."""
    sent = []
    for entry in await outbox.claim(now, 100):
        sent.append(entry.key)
        assert await outbox.delivered(entry.id, now)
    return sent


async def test_the_same_key_is_stored_and_delivered_once(outbox: OutboxStore) -> None:
    first = await outbox.enqueue("alice", "telegram", "42", m("hello"), "job:abc:1", now_ms=T0)
    again = await outbox.enqueue("alice", "telegram", "42", m("hi"), "job:abc:1", now_ms=T0 + S)
    assert first.new and not again.new and again.id == first.id
    assert await deliver_all(outbox, T0 + S) == ["job:abc:1"]
    stored = await outbox.get(first.id)
    assert stored is not None and stored.text == "hello"
    # enqueued once more after delivery (a job re-run after a crash): still nothing to send
    late = await outbox.enqueue("alice", "telegram", "42", m("x"), "job:abc:1", now_ms=T0 + 9 * S)
    assert not late.new
    assert await deliver_all(outbox, T0 + HOUR) == []


async def test_a_key_is_per_chat(outbox: OutboxStore) -> None:
    await put(outbox, "k", chat="1")
    await put(outbox, "k", chat="2")
    await put(outbox, "k", chat="1", tenant="bob")
    assert sorted(await deliver_all(outbox, T0)) == ["k", "k", "k"]


async def test_an_empty_key_and_unmasked_text_are_refused(outbox: OutboxStore) -> None:
    with pytest.raises(ValueError):
        await outbox.enqueue("alice", "telegram", "42", m("x"), "", now_ms=T0)
    with pytest.raises(TypeError):
        await outbox.enqueue("alice", "telegram", "42", "raw", "k", now_ms=T0)  # type: ignore[arg-type]
    assert await outbox.claim(T0 + DAY) == []


def test_backoff_doubles_from_five_seconds_up_to_an_hour() -> None:
    waits = [backoff_ms(n, 5 * S, HOUR) // S for n in range(1, 13)]
    assert waits == [5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600]
    assert backoff_ms(10_000, 5 * S, HOUR) == HOUR


async def test_failed_attempts_follow_the_backoff_schedule(outbox: OutboxStore) -> None:
    entry_id = await put(outbox)
    now, waits = T0, []
    for _ in range(8):
        (entry,) = await outbox.claim(now)
        assert await outbox.claim(now) == []  # leased: not handed out twice
        assert await outbox.failed(entry.id, "network", now) == "queued"
        stored = await outbox.get(entry_id)
        assert stored is not None
        waits.append((stored.due_ms - now) // S)
        assert await outbox.claim(stored.due_ms - 1) == []  # not before its time
        now = stored.due_ms
    assert waits == [5, 10, 20, 40, 80, 160, 320, 640]
    assert await deliver_all(outbox, now) == ["k"]


async def test_retry_after_is_a_floor_for_the_wait(outbox: OutboxStore) -> None:
    entry_id = await put(outbox)
    (entry,) = await outbox.claim(T0)
    await outbox.failed(entry.id, "rate_limited", T0, retry_after_ms=42 * S)
    stored = await outbox.get(entry_id)
    assert stored is not None and stored.due_ms == T0 + 42 * S


async def test_a_permanent_error_dead_letters_at_once_and_shows_in_failures(
    outbox: OutboxStore,
) -> None:
    entry_id = await put(outbox, "gone")
    await put(outbox, "fine", tenant="bob")
    (mine,) = [e for e in await outbox.claim(T0) if e.tenant == "alice"]
    assert await outbox.failed(mine.id, "forbidden", T0, permanent=True) == "dead"
    assert [e.tenant for e in await outbox.claim(T0 + DAY)] == ["bob"]  # bob's lease ran out
    (failure,) = await outbox.failures("alice", "telegram", "42")
    assert (failure.id, failure.state, failure.last_error) == (entry_id, "dead", "forbidden")
    assert await outbox.failures("bob") == []
    assert [e.id for e in await outbox.failures()] == [entry_id]  # the operator's view


async def test_an_entry_dies_after_max_attempts(db: Database) -> None:
    outbox = OutboxStore(db, OutboxPolicy(max_attempts=3))
    entry_id = await put(outbox)
    now, states = T0, []
    for _ in range(3):
        (entry,) = await outbox.claim(now)
        states.append(await outbox.failed(entry.id, "network", now))
        now += HOUR
    assert states == ["queued", "queued", "dead"]
    assert await outbox.claim(now) == []
    stored = await outbox.get(entry_id)
    assert stored is not None and (stored.state, stored.attempts) == ("dead", 3)


async def test_an_entry_past_its_attempts_is_dead_lettered_by_the_claim(db: Database) -> None:
    outbox = OutboxStore(db, OutboxPolicy(max_attempts=1, base_ms=S))
    entry_id = await put(outbox)
    await outbox.claim(T0)
    # the process died holding the claim; its lease ran out: the claim ends it
    assert await outbox.claim(T0 + outbox.policy.lease_ms) == []
    stored = await outbox.get(entry_id)
    assert stored is not None and (stored.state, stored.last_error) == ("dead", "expired")


async def test_an_entry_dies_when_its_retries_outlive_the_max_age(db: Database) -> None:
    outbox = OutboxStore(db, OutboxPolicy(max_age_ms=HOUR))
    await put(outbox)
    (entry,) = await outbox.claim(T0 + HOUR - 2 * S)
    assert await outbox.failed(entry.id, "network", T0 + HOUR - 2 * S) == "dead"


async def test_an_old_entry_never_tried_is_still_delivered(outbox: OutboxStore) -> None:
    await put(outbox)  # the daemon was down for three days
    assert await deliver_all(outbox, T0 + 3 * DAY) == ["k"]


async def test_a_lease_that_was_never_ended_is_claimed_again(outbox: OutboxStore) -> None:
    await put(outbox)
    (first,) = await outbox.claim(T0)
    lease = outbox.policy.lease_ms
    assert await outbox.claim(T0 + lease - 1) == []
    (second,) = await outbox.claim(T0 + lease)
    assert (second.id, first.attempts, second.attempts) == (first.id, 1, 2)


async def test_a_crash_between_claim_and_delivered_delivers_once_after_restart(
    open_db: OpenDb,
) -> None:
    before = OutboxStore(await open_db())
    await put(before, "job:abc:1")
    (claimed,) = await before.claim(T0)
    await before.db.aclose()  # the process is gone; its claim was never ended
    after = OutboxStore(await open_db())
    assert await after.claim(T0 + S) == []  # the lease still holds
    assert await deliver_all(after, T0 + after.policy.lease_ms) == ["job:abc:1"]
    assert await deliver_all(after, T0 + DAY) == []
    entry = await after.get(claimed.id)
    assert entry is not None and (entry.state, entry.attempts) == ("delivered", 2)


async def test_a_chats_messages_go_out_in_order(outbox: OutboxStore) -> None:
    await put(outbox, "first")
    await put(outbox, "second")
    await put(outbox, "other", chat="7")
    claimed = await outbox.claim(T0)
    assert sorted(e.key for e in claimed) == ["first", "other"]
    first = next(e for e in claimed if e.key == "first")
    await outbox.failed(first.id, "network", T0)
    assert await outbox.claim(T0 + 4 * S) == []  # "second" waits behind "first"
    assert [e.key for e in await outbox.claim(T0 + 5 * S)] == ["first"]
    await outbox.delivered(first.id, T0 + 5 * S)
    assert await deliver_all(outbox, T0 + 5 * S) == ["second"]


async def test_claims_come_oldest_due_first(outbox: OutboxStore) -> None:
    late = await put(outbox, "late", chat="1", at=T0 + 3 * S)
    early = await put(outbox, "early", chat="2", at=T0 + S)
    middle = await put(outbox, "middle", chat="3", at=T0 + 2 * S)
    assert [e.id for e in await outbox.claim(T0 + 9 * S, 2)] == [early, middle]
    assert [e.id for e in await outbox.claim(T0 + 9 * S, 2)] == [late]


async def test_delivered_or_failed_on_an_ended_entry_changes_nothing(outbox: OutboxStore) -> None:
    entry_id = await put(outbox)
    (entry,) = await outbox.claim(T0)
    assert await outbox.delivered(entry.id, T0)
    assert not await outbox.delivered(entry.id, T0 + S)
    assert await outbox.failed(entry.id, "network", T0 + S) is None
    stored = await outbox.get(entry_id)
    assert stored is not None
    assert (stored.state, stored.done_ms, stored.last_error) == ("delivered", T0, "")


async def test_due_now_wakes_only_the_chats_entries_waiting_for_that_error(
    outbox: OutboxStore,
) -> None:
    waiting = await put(outbox, "w", chat="5")
    other = await put(outbox, "o", chat="6")
    for entry in await outbox.claim(T0):
        await outbox.failed(entry.id, "window", T0, retry_after_ms=HOUR)
    assert await outbox.due_now("alice", "telegram", "5", "network", T0 + S) == 0
    assert await outbox.due_now("alice", "telegram", "5", "window", T0 + S) == 1
    assert [e.id for e in await outbox.claim(T0 + S)] == [waiting]
    assert other != waiting


async def test_prune_forgets_delivered_and_dead_entries_after_their_retention(
    outbox: OutboxStore,
) -> None:
    policy = outbox.policy
    delivered = await put(outbox, "a")
    dead = await put(outbox, "b", chat="7")
    queued = await put(outbox, "c", chat="8", at=T0 + DAY)
    for entry in await outbox.claim(T0):
        if entry.id == delivered:
            await outbox.delivered(entry.id, T0)
        else:
            await outbox.failed(entry.id, "forbidden", T0, permanent=True)
    assert await outbox.prune(T0 + policy.keep_delivered_ms) == 0
    assert await outbox.prune(T0 + policy.keep_delivered_ms + 1) == 1
    assert await outbox.get(delivered) is None and await outbox.get(dead) is not None
    assert await outbox.prune(T0 + policy.keep_dead_ms + 1) == 1
    assert await outbox.get(dead) is None and await outbox.get(queued) is not None


async def test_an_enqueue_inside_a_failed_transaction_leaves_nothing(outbox: OutboxStore) -> None:
    with pytest.raises(RuntimeError):
        async with outbox.db.transaction():
            entry = await put(outbox, "job:abc:1")
            await outbox.parts.put(entry, [OutboxPart(0, "draft", "900")])
            raise RuntimeError("crash before commit")
    assert await outbox.claim(T0 + DAY) == []
    assert await outbox.db.fetch_value("SELECT COUNT(*) FROM outbox_parts") == 0
    assert await put(outbox, "job:abc:1") > 0  # the key was not burnt


async def test_earliest_follows_leases_and_backoff(outbox: OutboxStore) -> None:
    assert await outbox.earliest_ms() is None
    await put(outbox)
    assert await outbox.earliest_ms() == T0
    (entry,) = await outbox.claim(T0)
    assert await outbox.earliest_ms() == T0 + outbox.policy.lease_ms
    await outbox.failed(entry.id, "network", T0)
    assert await outbox.earliest_ms() == T0 + 5 * S


# -- parts ------------------------------------------------------------------------------


async def test_parts_are_recorded_one_by_one_and_survive_a_reopen(open_db: OpenDb) -> None:
    outbox = OutboxStore(await open_db())
    entry = await put(outbox, "job:a:1")
    assert await outbox.parts.parts(entry) == {}
    await outbox.parts.mark(entry, OutboxPart(0, "sent", "1001"))
    await outbox.parts.mark(entry, OutboxPart(1, "unknown"))
    await outbox.db.aclose()
    again = OutboxStore(await open_db())
    assert await again.parts.parts(entry) == {
        0: OutboxPart(0, "sent", "1001"),
        1: OutboxPart(1, "unknown", ""),
    }
    await again.parts.mark(entry, OutboxPart(1, "sent", "1002"))  # replaces what was known
    assert (await again.parts.parts(entry))[1] == OutboxPart(1, "sent", "1002")


async def test_a_lease_of_a_killed_process_is_released_at_start(open_db: OpenDb) -> None:
    outbox = OutboxStore(await open_db())
    await put(outbox, "k1", chat="42")
    await put(outbox, "k2", chat="43")
    claimed = await outbox.claim(T0, 10)
    assert len(claimed) == 2
    await outbox.failed(claimed[1].id, "network", T0 + S)  # backing off: not a lease
    await outbox.db.aclose()  # the process dies holding the first claim
    restarted = OutboxStore(await open_db())
    assert await restarted.claim(T0 + 2 * S, 10) == []  # leased for two minutes, backing off
    assert await restarted.release_leases(T0 + 2 * S) == 1
    again = await restarted.claim(T0 + 2 * S, 10)
    assert [e.key for e in again] == ["k1"] and again[0].attempts == 2
    assert await restarted.release_leases(T0 + 3 * S) == 1  # claimed again by this process...
    assert await restarted.delivered(again[0].id, T0 + 3 * S) is True  # ...and ended normally


async def test_an_entry_with_parts_is_claimable_only_with_its_parts(outbox: OutboxStore) -> None:
    shown = [OutboxPart(0, "draft", "900"), OutboxPart(1, "sent", "901")]
    kept = await outbox.enqueue(
        "alice", "telegram", "42", m("t"), "reply:7", now_ms=T0, parts=shown
    )
    assert kept.new and await outbox.parts.parts(kept.id) == {p.idx: p for p in shown}
    (entry,) = await outbox.claim(T0)  # released once the parts were in: due at once
    assert entry.id == kept.id and entry.attempts == 1
    again = await outbox.enqueue("alice", "telegram", "42", m("t"), "reply:7", now_ms=T0, parts=[])
    assert not again.new and len(await outbox.parts.parts(kept.id)) == 2


async def test_an_entry_stored_with_parts_by_a_killed_process_is_due_at_the_next_start(
    outbox: OutboxStore,
) -> None:
    """Killed after the held insert and before the release: the entry waits like a claim
    of a dead process, and `release_leases` at the next start makes it due."""
    held = await outbox.db.fetch_value(
        "INSERT INTO outbox (tenant, channel, chat, key, text, state, created_ms, due_ms,"
        " leased) VALUES ('alice', 'telegram', '42', 'reply:8', 't', 'queued', ?, ?, 1)"
        " RETURNING id",
        (T0, T0 + outbox.policy.lease_ms),
    )
    assert await outbox.claim(T0 + S) == []
    assert await outbox.release_leases(T0 + S) == 1
    assert [e.id for e in await outbox.claim(T0 + S)] == [held]


async def test_no_write_holds_a_transaction_across_an_await(backend: str, tmp_path: Path) -> None:
    """SQLite, while roost.db has two ways in: every outbox write is one statement, so the
    `Database` never keeps the write lock while the event loop runs a store on the old
    connection (which would wait on the loop for a lock whose holder needs the loop)."""
    if backend != "sqlite":
        pytest.skip("the two-connection transition is SQLite's")
    database, statements = await traced(tmp_path / "roost.db")
    try:
        statements.clear()
        outbox = OutboxStore(database, OutboxPolicy(max_attempts=2))
        first = await put(outbox, "a")
        shown = [OutboxPart(0, "sent", "1")]
        await outbox.enqueue("alice", "telegram", "7", m("t"), "b", now_ms=T0, parts=shown)
        for entry in await outbox.claim(T0):
            await outbox.failed(entry.id, "network", T0)
        await outbox.due_now("alice", "telegram", "42", "network", T0)
        (again,) = [e for e in await outbox.claim(T0 + HOUR) if e.id == first]
        await outbox.delivered(again.id, T0 + HOUR)
        await outbox.release_leases(T0 + HOUR)
        await outbox.prune(T0 + 9 * 30 * DAY)
    finally:
        await database.aclose()
    assert statements and not [s for s in statements if s.lstrip().upper().startswith("BEGIN")]


async def test_pruning_an_entry_forgets_its_parts(outbox: OutboxStore) -> None:
    entry = await put(outbox)
    await outbox.parts.mark(entry, OutboxPart(0, "sent", "1"))
    (claimed,) = await outbox.claim(T0, 1)
    await outbox.delivered(claimed.id, T0)
    assert await outbox.prune(T0 + outbox.policy.keep_delivered_ms + 1) == 1
    assert await outbox.parts.parts(entry) == {}


# -- several processes on one database ---------------------------------------------------


async def test_two_connections_claiming_at_once_never_hand_out_one_entry(
    open_db: OpenDb,
) -> None:
    """Two instances (two `Database`s on one database) claim 200 entries of 200 chats in
    small batches at once: every entry is handed out exactly once. On PostgreSQL the
    claims run concurrently (SKIP LOCKED), on SQLite one after another (one writer)."""
    one, two = OutboxStore(await open_db()), OutboxStore(await open_db())
    async with one.db.transaction():
        for n in range(200):
            await put(one, f"k{n}", chat=str(n))

    async def drain(outbox: OutboxStore) -> list[int]:
        got: list[int] = []
        while batch := await outbox.claim(T0, 7):
            got += [e.id for e in batch]
        return got

    first, second = await asyncio.gather(drain(one), drain(two))
    assert len(first) + len(second) == 200
    assert len(set(first) | set(second)) == 200


async def test_a_claim_skips_rows_another_transaction_holds(backend: str, open_db: OpenDb) -> None:
    """PostgreSQL: while one instance's claim transaction is open, another's claim takes
    the other due entries without waiting for it (SKIP LOCKED), and never the held one."""
    if backend != "postgresql":
        pytest.skip("SQLite has one writer: a claim waits for the open transaction")
    one, two = OutboxStore(await open_db()), OutboxStore(await open_db())
    held = await put(one, "a", chat="1")
    free = await put(one, "b", chat="2")
    async with one.db.transaction():
        locked = await one.db.fetch_all("SELECT id FROM outbox WHERE id = ? FOR UPDATE", (held,))
        assert locked == [(held,)]
        claimed = await asyncio.wait_for(two.claim(T0), timeout=60)  # a hang, not a speed
        assert [e.id for e in claimed] == [free]


async def test_a_write_through_the_database_is_seen_by_the_daemons_connection(
    backend: str, tmp_path: Path
) -> None:
    """SQLite, during the move: the `Database` and `bridge.core.db`'s connection on one
    WAL file see each other's commits, and a write through the `Database` that starts
    while the daemon's connection holds the write lock waits for it (busy_timeout)
    instead of failing with "database is locked"."""
    if backend != "sqlite":
        pytest.skip("the two-connection transition is SQLite's")
    from bridge.core import db as core_db

    started = threading.Event()
    armed = False

    def trace(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(lambda sql: started.set() if armed else None)

    path = tmp_path / "roost.db"
    conn = core_db.connect(path)
    database = await SqliteDatabase.open(path, readers=0, on_connect=trace)
    try:
        assert await database.migrate(MIGRATIONS) == len(MIGRATIONS)  # the same numbering
        outbox = OutboxStore(database)
        entry = await put(outbox, "x")
        assert conn.execute("SELECT key FROM outbox WHERE id = ?", (entry,)).fetchone() == ("x",)
        conn.execute("BEGIN IMMEDIATE")  # the daemon's connection holds the write lock ...
        conn.execute("UPDATE outbox SET text = 'y' WHERE id = ?", (entry,))
        armed = True
        pending = asyncio.ensure_future(put(outbox, "z"))
        assert await asyncio.to_thread(started.wait, 60)  # ... the put's BEGIN has started
        conn.execute("COMMIT")  # ... and waits until the lock is let go
        second = await asyncio.wait_for(pending, timeout=60)
        got = conn.execute("SELECT key FROM outbox WHERE id = ?", (second,)).fetchone()
        stored = await outbox.get(entry)
        assert got == ("z",) and stored is not None and stored.text == "y"
    finally:
        await database.aclose()
        conn.close()


async def test_claim_reads_the_due_and_chat_queue_indexes_with_10000_entries(
    backend: str, tmp_path: Path
) -> None:
    """SQLite's plans for what the claim and `earliest_ms` really run."""
    if backend != "sqlite":
        pytest.skip("SQLite's query plans")
    path = tmp_path / "roost.db"
    database, statements = await traced(path)
    try:
        outbox = OutboxStore(database)
        rows: list[Any] = [
            (f"t{n % 1000}", str(n % 1000), f"k{n}", T0 + n * S, T0 + n * S) for n in range(10_000)
        ]
        await database.execute_many(
            "INSERT INTO outbox (tenant, channel, chat, key, text, state, created_ms, due_ms)"
            " VALUES (?, 'telegram', ?, ?, 'text', 'queued', ?, ?)",
            rows,
        )
        await database.execute("ANALYZE")
        statements.clear()
        assert len(await outbox.claim(T0 + 500 * S, 50)) == 50
        await outbox.earliest_ms()
    finally:
        await database.aclose()
    plain = sqlite3.connect(path)
    try:
        (claim, earliest) = (
            " | ".join(str(r[-1]) for r in plain.execute("EXPLAIN QUERY PLAN " + sql))
            for sql in statements
            if "RETURNING" in sql or "MIN(due_ms)" in sql
        )
    finally:
        plain.close()
    assert "USING INDEX outbox_due" in claim and "outbox_chat_queue" in claim
    assert "SCAN" not in claim
    assert "USING INDEX outbox_due" in earliest
