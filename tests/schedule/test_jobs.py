"""The job store on a real SQLite database: create, list, limits, runs, the due index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bridge.core import db
from bridge.schedule.jobs import ALPHABET, ID_LENGTH, JobLimits, JobStore, LimitError
from bridge.schedule.schema import transaction
from tests.masking import m

MIN = 60_000
HOUR = 60 * MIN
T0 = 1_800_000_000_000  # 2027-01-15, a fixed "now"


def open_db(path: Path) -> sqlite3.Connection:
    """roost.db as the daemon opens it (the schedule tables are one of its migrations)."""
    return db.connect(path)


def next_run(spec: str, tz: str, after_ms: int) -> int | None:
    """A small real recurrence for these tests: "every <ms>" (slots on multiples of
    the period) or "at <ms>,<ms>,..." (explicit slots; None after the last)."""
    word, _, rest = spec.partition(" ")
    if word == "every":
        period = int(rest)
        return (after_ms // period + 1) * period
    if word == "at":
        return next((t for t in sorted(map(int, rest.split(","))) if t > after_ms), None)
    raise ValueError(f"unknown spec {spec!r}")


def make(store: JobStore, tenant: str = "alice", chat: str = "42", **over: object) -> str:
    fields: dict[str, object] = {
        "tenant": tenant,
        "channel": "telegram",
        "chat": chat,
        "kind": "reminder",
        "spec": "",
        "payload": "take the bread out",
        "tz": "Europe/Berlin",
        "next_run_ms": T0 + 20 * MIN,
        "created_ms": T0,
    }
    fields.update(over)
    fields["payload"] = m(str(fields["payload"]))
    return store.create(**fields).id  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(open_db(tmp_path / "roost.db"), next_run, JobLimits(max_jobs=5))


def test_create_returns_a_short_id_and_the_row_reads_back(store: JobStore) -> None:
    job_id = make(store, payload="call the dentist")
    assert len(job_id) == ID_LENGTH and set(job_id) <= set(ALPHABET)
    job = store.get("alice", job_id)
    assert job is not None
    assert (job.kind, job.payload, job.tz, job.state) == (
        "reminder",
        "call the dentist",
        "Europe/Berlin",
        "active",
    )
    assert (job.next_run_ms, job.created_ms, job.runs, job.fail_count) == (T0 + 20 * MIN, T0, 0, 0)
    assert not job.recurring


def test_the_migration_survives_a_reopen(tmp_path: Path) -> None:
    open_db(tmp_path / "roost.db").close()
    store = JobStore(open_db(tmp_path / "roost.db"), next_run)
    assert store.list_jobs("alice") == []


def test_list_by_chat_and_by_tenant_soonest_first(store: JobStore) -> None:
    late = make(store, chat="1", next_run_ms=T0 + 2 * HOUR)
    soon = make(store, chat="1", next_run_ms=T0 + HOUR)
    other_chat = make(store, chat="2")
    make(store, tenant="bob", chat="1")
    assert [j.id for j in store.list_jobs("alice", "telegram", "1")] == [soon, late]
    assert [j.id for j in store.list_jobs("alice")] == [other_chat, soon, late]
    assert len(store.list_jobs("bob")) == 1


def test_another_tenant_cannot_see_or_touch_a_job(store: JobStore) -> None:
    job_id = make(store, tenant="alice")
    assert store.get("bob", job_id) is None
    assert not store.remove("bob", job_id)
    assert not store.pause("bob", job_id)
    assert not store.resume("bob", job_id, T0)
    job = store.get("alice", job_id)
    assert job is not None and job.state == "active"


def test_ids_are_unique_per_tenant_and_collisions_are_retried(tmp_path: Path) -> None:
    ids = iter(["aaaaaa", "aaaaaa", "aaaaaa", "bbbbbb"])
    store = JobStore(open_db(tmp_path / "roost.db"), next_run, new_id=lambda: next(ids))
    assert make(store, tenant="alice") == "aaaaaa"
    assert make(store, tenant="bob") == "aaaaaa"  # another tenant: the same id is free
    assert make(store, tenant="alice") == "bbbbbb"  # one collision, retried


def test_the_job_count_limit_refuses_with_a_clear_message(store: JobStore) -> None:
    ids = [make(store) for _ in range(5)]
    with pytest.raises(LimitError) as refused:
        make(store)
    assert "5" in refused.value.message and "/jobs" in refused.value.message
    make(store, tenant="bob")  # the limit is per tenant
    store.remove("alice", ids[0])
    make(store)  # room again
    store.mark_run("alice", ids[1], ran_ms=T0, next_run_ms=None)  # a done job does not count
    make(store)
    assert len(store.list_jobs("alice")) == 5


def test_paused_jobs_count_towards_the_limit(store: JobStore) -> None:
    for _ in range(5):
        store.pause("alice", make(store))
    with pytest.raises(LimitError):
        make(store)


def test_a_recurrence_faster_than_the_minimum_interval_is_refused(store: JobStore) -> None:
    with pytest.raises(LimitError) as refused:
        make(store, kind="turn", spec=f"every {MIN}", next_run_ms=T0 + MIN)
    assert "1 min" in refused.value.message and "5 min" in refused.value.message
    make(store, kind="turn", spec=f"every {5 * MIN}", next_run_ms=T0 + 5 * MIN)


def test_a_short_gap_later_in_the_recurrence_is_found(store: JobStore) -> None:
    slots = [T0 + k * HOUR for k in range(1, 11)] + [T0 + 10 * HOUR + MIN]
    with pytest.raises(LimitError):
        make(store, spec="at " + ",".join(map(str, slots)), next_run_ms=slots[0])


def test_an_over_long_payload_is_refused(store: JobStore) -> None:
    with pytest.raises(LimitError):
        make(store, payload="x" * 4001)


def test_an_unknown_kind_is_refused(store: JobStore) -> None:
    with pytest.raises(ValueError):
        make(store, kind="shell")


def test_mark_run_never_schedules_a_recurring_job_closer_than_the_minimum(
    store: JobStore,
) -> None:
    job_id = make(store, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
    store.mark_run("alice", job_id, ran_ms=T0 + HOUR, next_run_ms=T0 + HOUR + 1000)
    job = store.get("alice", job_id)
    assert job is not None and job.next_run_ms == T0 + HOUR + 5 * MIN


def test_a_one_shot_is_done_after_its_run_and_pruned_later(store: JobStore) -> None:
    job_id = make(store)
    assert [j.id for j in store.due(T0 + 20 * MIN)] == [job_id]
    assert store.mark_run("alice", job_id, ran_ms=T0 + 20 * MIN, next_run_ms=None)
    assert store.due(T0 + 99 * HOUR) == []
    assert store.list_jobs("alice") == []
    assert [j.state for j in store.list_jobs("alice", done=True)] == ["done"]
    assert store.prune_done(T0 + 20 * MIN) == 0
    assert store.prune_done(T0 + 21 * MIN) == 1
    assert store.get("alice", job_id) is None


def test_mark_run_on_a_removed_job_records_nothing(store: JobStore) -> None:
    job_id = make(store)
    store.remove("alice", job_id)
    assert not store.mark_run("alice", job_id, ran_ms=T0, next_run_ms=T0 + HOUR)
    assert store.get("alice", job_id) is None


def test_failures_count_up_and_a_success_clears_them(store: JobStore) -> None:
    job_id = make(store, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
    store.mark_run("alice", job_id, ran_ms=T0 + HOUR, next_run_ms=T0 + 2 * HOUR, error="E" * 999)
    store.mark_run("alice", job_id, ran_ms=T0 + 2 * HOUR, next_run_ms=T0 + 3 * HOUR, error="boom")
    job = store.get("alice", job_id)
    assert job is not None and (job.fail_count, job.last_error, job.runs) == (2, "boom", 2)
    store.mark_run("alice", job_id, ran_ms=T0 + 3 * HOUR, next_run_ms=T0 + 4 * HOUR)
    job = store.get("alice", job_id)
    assert job is not None and (job.fail_count, job.last_error, job.runs) == (0, "", 3)
    store.mark_run(
        "alice", job_id, ran_ms=T0 + 4 * HOUR, next_run_ms=T0 + 5 * HOUR, error="E" * 999
    )
    job = store.get("alice", job_id)
    assert job is not None and len(job.last_error) == 200


def test_paused_jobs_are_not_due_and_resume_skips_missed_slots(store: JobStore) -> None:
    job_id = make(store, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
    assert store.pause("alice", job_id)
    assert not store.pause("alice", job_id)  # already paused
    assert store.due(T0 + 10 * HOUR) == []
    assert store.resume("alice", job_id, T0 + 10 * HOUR + MIN)
    job = store.get("alice", job_id)
    assert job is not None and (job.state, job.next_run_ms) == ("active", T0 + 11 * HOUR)
    assert not store.resume("alice", job_id, T0)  # not paused


def test_a_one_shot_resumed_after_its_time_runs_at_once(store: JobStore) -> None:
    job_id = make(store)
    store.pause("alice", job_id)
    store.resume("alice", job_id, T0 + HOUR)
    assert [j.id for j in store.due(T0 + HOUR)] == [job_id]


def test_a_job_paused_while_it_ran_stays_paused(store: JobStore) -> None:
    job_id = make(store, spec=f"every {HOUR}", next_run_ms=T0 + HOUR)
    store.pause("alice", job_id)
    store.mark_run("alice", job_id, ran_ms=T0 + HOUR, next_run_ms=T0 + 2 * HOUR)
    job = store.get("alice", job_id)
    assert job is not None and job.state == "paused"


def test_due_is_ordered_and_limited(store: JobStore) -> None:
    c = make(store, next_run_ms=T0 + 3 * MIN)
    a = make(store, next_run_ms=T0 + 1 * MIN)
    b = make(store, next_run_ms=T0 + 2 * MIN)
    make(store, next_run_ms=T0 + HOUR)
    assert [j.id for j in store.due(T0 + 3 * MIN)] == [a, b, c]
    assert [j.id for j in store.due(T0 + 3 * MIN, limit=2)] == [a, b]
    assert store.earliest_ms() == T0 + MIN


def fill(conn: sqlite3.Connection, tenants: int, per_tenant: int) -> None:
    """Many jobs straight into the table, as a long-running daemon would have them."""
    rows = [
        (f"t{t}", f"j{j:05d}", "telegram", str(t), "turn", f"every {HOUR}", "p", "UTC",
         "active" if j % 3 else "paused", T0 + (t * per_tenant + j) * 1000, T0)
        for t in range(tenants)
        for j in range(per_tenant)
    ]  # fmt: skip
    with transaction(conn):
        conn.executemany(
            "INSERT INTO jobs (tenant, id, channel, chat, kind, spec, payload, tz, state,"
            " next_run_ms, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    conn.execute("ANALYZE")


def plans_of(store: JobStore, call: object) -> list[str]:
    """EXPLAIN QUERY PLAN of every SELECT the store really ran during `call()`."""
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        call()  # type: ignore[operator]
    finally:
        store.conn.set_trace_callback(None)
    plans = []
    for sql in statements:
        if sql.lstrip().upper().startswith("SELECT"):
            rows = store.conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
            plans.append(" | ".join(str(r[-1]) for r in rows))
    return plans


def test_due_and_earliest_read_the_due_index_with_10000_jobs(tmp_path: Path) -> None:
    store = JobStore(open_db(tmp_path / "roost.db"), next_run)
    fill(store.conn, tenants=1000, per_tenant=10)
    (count,) = store.conn.execute("SELECT COUNT(DISTINCT tenant) FROM jobs").fetchone()
    assert count == 1000
    due = store.due(T0 + 100_000, limit=50)
    assert len(due) == 50 and all(j.state == "active" for j in due)
    for call in (lambda: store.due(T0 + 100_000, 50), store.earliest_ms):
        (plan,) = plans_of(store, call)
        assert "USING INDEX jobs_due" in plan and "SCAN" not in plan
