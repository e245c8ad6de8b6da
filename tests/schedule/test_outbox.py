"""The outbox on a real SQLite database: idempotency, leases, backoff, dead letters."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.schedule.outbox import OutboxPolicy, OutboxStore, backoff_ms
from bridge.schedule.schema import transaction
from tests.masking import m
from tests.schedule.test_jobs import T0, open_db, plans_of

S = 1000
HOUR = 3600 * S
DAY = 24 * HOUR


@pytest.fixture
def outbox(tmp_path: Path) -> OutboxStore:
    return OutboxStore(open_db(tmp_path / "roost.db"))


def put(
    outbox: OutboxStore, key: str = "k", chat: str = "42", tenant: str = "alice", at: int = T0
) -> int:
    return outbox.enqueue(tenant, "telegram", chat, m(f"text of {key}"), key, now_ms=at).id


def deliver_all(outbox: OutboxStore, now: int) -> list[str]:
    """One delivery pass that always succeeds; the keys that went out."""
    sent = []
    for entry in outbox.claim(now, 100):
        sent.append(entry.key)
        assert outbox.delivered(entry.id, now)
    return sent


def test_the_same_key_is_stored_and_delivered_once(outbox: OutboxStore) -> None:
    first = outbox.enqueue("alice", "telegram", "42", m("hello"), "job:abc:1", now_ms=T0)
    again = outbox.enqueue("alice", "telegram", "42", m("hello"), "job:abc:1", now_ms=T0 + S)
    assert first.new and not again.new and again.id == first.id
    assert deliver_all(outbox, T0 + S) == ["job:abc:1"]
    # enqueued once more after delivery (a job re-run after a crash): still nothing to send
    assert not outbox.enqueue(
        "alice", "telegram", "42", m("hello"), "job:abc:1", now_ms=T0 + 9 * S
    ).new
    assert deliver_all(outbox, T0 + HOUR) == []


def test_a_key_is_per_chat(outbox: OutboxStore) -> None:
    put(outbox, "k", chat="1")
    put(outbox, "k", chat="2")
    put(outbox, "k", chat="1", tenant="bob")
    assert sorted(deliver_all(outbox, T0)) == ["k", "k", "k"]


def test_an_empty_key_is_refused(outbox: OutboxStore) -> None:
    with pytest.raises(ValueError):
        outbox.enqueue("alice", "telegram", "42", m("x"), "", now_ms=T0)


def test_backoff_doubles_from_five_seconds_up_to_an_hour() -> None:
    waits = [backoff_ms(n, 5 * S, HOUR) // S for n in range(1, 13)]
    assert waits == [5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600]
    assert backoff_ms(10_000, 5 * S, HOUR) == HOUR


def test_failed_attempts_follow_the_backoff_schedule(outbox: OutboxStore) -> None:
    entry_id = put(outbox)
    now, waits = T0, []
    for _ in range(8):
        (entry,) = outbox.claim(now)
        assert outbox.claim(now) == []  # leased: not handed out twice
        assert outbox.failed(entry.id, "network", now) == "queued"
        stored = outbox.get(entry_id)
        assert stored is not None
        waits.append((stored.due_ms - now) // S)
        assert outbox.claim(stored.due_ms - 1) == []  # not before its time
        now = stored.due_ms
    assert waits == [5, 10, 20, 40, 80, 160, 320, 640]
    assert deliver_all(outbox, now) == ["k"]


def test_retry_after_is_a_floor_for_the_wait(outbox: OutboxStore) -> None:
    entry_id = put(outbox)
    (entry,) = outbox.claim(T0)
    outbox.failed(entry.id, "rate_limited", T0, retry_after_ms=42 * S)
    stored = outbox.get(entry_id)
    assert stored is not None and stored.due_ms == T0 + 42 * S


def test_a_permanent_error_dead_letters_at_once_and_shows_in_failures(outbox: OutboxStore) -> None:
    entry_id = put(outbox, "gone")
    put(outbox, "fine", tenant="bob")
    (mine,) = [e for e in outbox.claim(T0) if e.tenant == "alice"]
    assert outbox.failed(mine.id, "forbidden", T0, permanent=True) == "dead"
    assert [e.tenant for e in outbox.claim(T0 + DAY)] == ["bob"]  # bob's lease ran out
    (failure,) = outbox.failures("alice", "telegram", "42")
    assert (failure.id, failure.state, failure.last_error) == (entry_id, "dead", "forbidden")
    assert outbox.failures("bob") == []
    assert [e.id for e in outbox.failures()] == [entry_id]  # the operator's view


def test_an_entry_dies_after_max_attempts(tmp_path: Path) -> None:
    outbox = OutboxStore(open_db(tmp_path / "roost.db"), OutboxPolicy(max_attempts=3))
    entry_id = put(outbox)
    now, states = T0, []
    for _ in range(3):
        (entry,) = outbox.claim(now)
        states.append(outbox.failed(entry.id, "network", now))
        now += HOUR
    assert states == ["queued", "queued", "dead"]
    assert outbox.claim(now) == []
    stored = outbox.get(entry_id)
    assert stored is not None and (stored.state, stored.attempts) == ("dead", 3)


def test_an_entry_dies_when_its_retries_outlive_the_max_age(tmp_path: Path) -> None:
    policy = OutboxPolicy(max_age_ms=HOUR)
    outbox = OutboxStore(open_db(tmp_path / "roost.db"), policy)
    put(outbox)
    (entry,) = outbox.claim(T0 + HOUR - 2 * S)
    assert outbox.failed(entry.id, "network", T0 + HOUR - 2 * S) == "dead"


def test_an_old_entry_never_tried_is_still_delivered(outbox: OutboxStore) -> None:
    put(outbox)  # the daemon was down for three days
    assert deliver_all(outbox, T0 + 3 * DAY) == ["k"]


def test_a_lease_that_was_never_ended_is_claimed_again(outbox: OutboxStore) -> None:
    put(outbox)
    (first,) = outbox.claim(T0)
    lease = outbox.policy.lease_ms
    assert outbox.claim(T0 + lease - 1) == []
    (second,) = outbox.claim(T0 + lease)
    assert (second.id, first.attempts, second.attempts) == (first.id, 1, 2)


def test_a_crash_between_claim_and_delivered_delivers_once_after_restart(tmp_path: Path) -> None:
    path = tmp_path / "roost.db"
    before = OutboxStore(open_db(path))
    put(before, "job:abc:1")
    (claimed,) = before.claim(T0)
    before.conn.close()  # the process is gone; its claim was never ended
    after = OutboxStore(open_db(path))
    assert after.claim(T0 + S) == []  # the lease still holds
    sent = deliver_all(after, T0 + after.policy.lease_ms)
    assert sent == ["job:abc:1"]
    assert deliver_all(after, T0 + DAY) == []
    entry = after.get(claimed.id)
    assert entry is not None and (entry.state, entry.attempts) == ("delivered", 2)


def test_a_chats_messages_go_out_in_order(outbox: OutboxStore) -> None:
    put(outbox, "first")
    put(outbox, "second")
    put(outbox, "other", chat="7")
    claimed = outbox.claim(T0)
    assert sorted(e.key for e in claimed) == ["first", "other"]
    first = next(e for e in claimed if e.key == "first")
    outbox.failed(first.id, "network", T0)
    assert outbox.claim(T0 + 4 * S) == []  # "second" waits behind "first"
    assert [e.key for e in outbox.claim(T0 + 5 * S)] == ["first"]
    outbox.delivered(first.id, T0 + 5 * S)
    assert deliver_all(outbox, T0 + 5 * S) == ["second"]


def test_delivered_or_failed_on_an_ended_entry_changes_nothing(outbox: OutboxStore) -> None:
    entry_id = put(outbox)
    (entry,) = outbox.claim(T0)
    assert outbox.delivered(entry.id, T0)
    assert not outbox.delivered(entry.id, T0 + S)
    assert outbox.failed(entry.id, "network", T0 + S) is None
    stored = outbox.get(entry_id)
    assert stored is not None and (stored.state, stored.done_ms, stored.last_error) == (
        "delivered",
        T0,
        "",
    )


def test_prune_forgets_delivered_and_dead_entries_after_their_retention(
    outbox: OutboxStore,
) -> None:
    policy = outbox.policy
    delivered = put(outbox, "a")
    dead = put(outbox, "b", chat="7")
    queued = put(outbox, "c", chat="8", at=T0 + DAY)
    for entry in outbox.claim(T0):
        if entry.id == delivered:
            outbox.delivered(entry.id, T0)
        else:
            outbox.failed(entry.id, "forbidden", T0, permanent=True)
    assert outbox.prune(T0 + policy.keep_delivered_ms) == 0
    assert outbox.prune(T0 + policy.keep_delivered_ms + 1) == 1
    assert outbox.get(delivered) is None and outbox.get(dead) is not None
    assert outbox.prune(T0 + policy.keep_dead_ms + 1) == 1
    assert outbox.get(dead) is None and outbox.get(queued) is not None


def test_an_enqueue_inside_a_failed_transaction_leaves_nothing(outbox: OutboxStore) -> None:
    with pytest.raises(RuntimeError), transaction(outbox.conn):
        put(outbox, "job:abc:1")
        raise RuntimeError("the job's mark_run failed")
    assert outbox.claim(T0 + DAY) == []
    assert put(outbox, "job:abc:1") > 0  # the key was not burnt


def test_earliest_follows_leases_and_backoff(outbox: OutboxStore) -> None:
    assert outbox.earliest_ms() is None
    put(outbox)
    assert outbox.earliest_ms() == T0
    (entry,) = outbox.claim(T0)
    assert outbox.earliest_ms() == T0 + outbox.policy.lease_ms
    outbox.failed(entry.id, "network", T0)
    assert outbox.earliest_ms() == T0 + 5 * S


def test_claim_reads_the_due_and_chat_queue_indexes_with_10000_entries(
    outbox: OutboxStore,
) -> None:
    with transaction(outbox.conn):
        for n in range(10_000):
            put(outbox, f"k{n}", chat=str(n % 1000), tenant=f"t{n % 1000}", at=T0 + n * S)
    outbox.conn.execute("ANALYZE")
    plans = plans_of(outbox, lambda: outbox.claim(T0 + 500 * S, 50))  # type: ignore[arg-type]
    select = next(p for p in plans if "outbox" in p)
    assert "USING INDEX outbox_due" in select and "outbox_chat_queue" in select
    assert "SCAN" not in select
    (plan,) = plans_of(outbox, outbox.earliest_ms)  # type: ignore[arg-type]
    assert "USING INDEX outbox_due" in plan
