"""The session store (`bridge.core.sessions`) on both backends: turns stored and read back
through another connection (another instance), two instances appending to one session at
once (nothing lost, each turn its own number), folds planned on one connection and voided by
another, resets and idle expiry archiving, the hard drop; and what a turn costs it: one
SELECT to load (one row on a cache hit) and one unit to append."""

from __future__ import annotations

import asyncio
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from bridge.core.compaction import summary_message
from bridge.core.history import encode_calls
from bridge.core.sessions import SessionKey, SessionStore
from bridge.core.usage import Tokens, UsageStore, recorded
from bridge.skills.grades import TurnLog, turn_recorded
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database
from bridge.types.backend import ChatMessage, ToolCallRequest
from tests.masking import m
from tests.sessions_kit import DAY, store_on
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced
from tests.waits import HANG_S

KEY = SessionKey("local", "web", "default")
USAGE_DAY = "2027-01-15"


def turn(i: int, size: int = 100) -> tuple[Any, Any, str]:
    return m(f"q{i} " + "x" * size), m(f"a{i} " + "y" * size), f"m{i}"


async def test_a_turn_is_read_back_by_another_instance(db: Database, open_db: OpenDb) -> None:
    one = store_on(db)
    await one.append(KEY, m("hi"), m("hello"), "m1", 100.0)
    two = store_on(await open_db())
    again = await two.load(KEY, 200.0)
    assert [(x.role, x.content) for x in again.history] == [("user", "hi"), ("assistant", "hello")]
    assert (again.turns, again.chars, again.started_at, again.expired) == (1, 7, 100.0, False)
    await one.append(KEY, m("more"), m("ok"), "m2", 300.0)
    seen = await two.load(KEY, 301.0)  # two's cached copy is stale: its stamp moved
    assert [x.content for x in seen.history] == ["hi", "hello", "more", "ok"]
    assert seen == await one.load(KEY, 301.0)


async def test_two_instances_appending_to_one_session_lose_nothing(
    db: Database, open_db: OpenDb
) -> None:
    one, two = store_on(db, 10**6), store_on(await open_db(), 10**6)

    async def writes(store: SessionStore, name: str) -> None:
        for i in range(15):
            await store.append(KEY, m(f"{name}{i}"), m(f"re {name}{i}"), f"{name}{i}", 1.0 + i)

    await asyncio.gather(writes(one, "a"), writes(two, "b"))
    rows = await db.fetch_all("SELECT turn, role, content FROM session_messages ORDER BY id", ())
    assert len(rows) == 60
    turns = Counter(int(t) for t, _, _ in rows)
    assert sorted(turns) == list(range(1, 31)) and set(turns.values()) == {2}
    for i in range(0, 60, 2):  # each turn's two messages together, in order
        (t1, r1, c1), (t2, r2, c2) = rows[i], rows[i + 1]
        assert (t1, r1, r2) == (t2, "user", "assistant") and c2 == f"re {c1}"
    asked = [c for _, r, c in rows if r == "user"]
    assert sorted(asked) == sorted([f"a{i}" for i in range(15)] + [f"b{i}" for i in range(15)])
    assert [c for c in asked if c[0] == "a"] == [f"a{i}" for i in range(15)]
    session = await store_on(await open_db(), 10**6).load(KEY, 20.0)
    assert session.turns == 30 and len(session.history) == 60
    assert session.chars == sum(len(x.content) for x in session.history)


async def test_a_fold_replaces_the_oldest_turns_and_another_instance_sees_it(
    db: Database, open_db: OpenDb
) -> None:
    s = store_on(db, 1000)
    for i in range(6):
        await s.append(KEY, *turn(i), float(i))
    fold = await s.fold_plan(KEY)
    assert fold is not None and fold.plan.turns == 4 and fold.chars_before == 6 * 206
    assert [x.content[:2] for x in fold.messages][::2] == ["q0", "q1", "q2", "q3"]
    after = await s.fold(KEY, fold, m("Four questions."))
    session = await store_on(await open_db(), 1000).load(KEY, 10.0)
    assert after == session.chars == 2 * 206 + len(summary_message("Four questions.").content)
    assert session.history[0] == summary_message("Four questions.")
    assert (session.summarised, session.kept, session.dropped) == (4, 2, 0)
    assert await s.load(KEY, 10.0) == session
    assert await s.fold_plan(KEY) is None


async def test_a_fold_planned_on_one_instance_is_voided_by_anothers(
    db: Database, open_db: OpenDb
) -> None:
    s, other = store_on(db, 1000), store_on(await open_db(), 1000)
    for i in range(6):
        await s.append(KEY, *turn(i), float(i))
    plan = await s.fold_plan(KEY)
    first = await other.fold_plan(KEY)
    assert plan is not None and first is not None
    assert await other.drop(KEY, first) is not None
    assert await s.fold(KEY, plan, m("late")) is None
    session = await s.load(KEY, 21.0)
    assert session.summary == "" and session.dropped == plan.plan.turns
    await other.reset(KEY, 22.0)
    for i in range(6):
        await other.append(KEY, *turn(i), 23.0)
    assert await s.fold(KEY, plan, m("about the old conversation")) is None


async def test_past_twice_the_budget_the_append_drops_at_once(db: Database) -> None:
    s = store_on(db, 1000)
    for i in range(10):  # the tenth: 2060 > 2 x 1000
        await s.append(KEY, *turn(i), 100.0 + i)
    session = await s.load(KEY, 200.0)
    kept = len(session.history) // 2
    assert session.chars <= 500 and session.turns == 10 and session.dropped == 10 - kept
    assert session.history[-1].content.startswith("a9")


async def test_a_reset_and_idle_expiry_archive_the_conversation(
    db: Database, open_db: OpenDb
) -> None:
    s = store_on(db, idle_s=7 * DAY)
    await s.append(KEY, m("first question"), m("first answer"), "m1", 0.0)
    first = await s.archive.current(KEY, 0.0)
    assert (await s.load(KEY, 6.9 * DAY)).history
    fresh = await s.load(KEY, 7.1 * DAY)
    assert fresh.history == () and fresh.expired
    await s.append(KEY, m("second question"), m("second answer"), "m2", 7.2 * DAY)
    other = store_on(await open_db())
    await other.reset(KEY, 7.3 * DAY)
    assert (await s.load(KEY, 7.4 * DAY)).history == ()
    listed = await s.archive.listing(KEY, 7.4 * DAY)
    assert [(x["title"], x["current"]) for x in listed] == [
        ("", True),
        ("second question", False),
        ("first question", False),
    ]
    assert listed[2]["id"] == first and len({x["id"] for x in listed}) == 3
    page = await s.archive.page(KEY, first, None, 10, 7.4 * DAY)
    assert page is not None and [x["text"] for x in page.messages] == [
        "first question",
        "first answer",
    ]
    assert await db.fetch_value("SELECT count(*) FROM sessions") == 0


async def test_the_current_conversation_is_made_once_by_racing_instances(
    db: Database, open_db: OpenDb
) -> None:
    stores = [store_on(db), store_on(await open_db())]
    made = await asyncio.gather(*(s.archive.current(KEY, 1.0) for s in stores * 4))
    assert len(set(made)) == 1
    assert await db.fetch_value("SELECT count(*) FROM conversations") == 1


class Counting:
    """A `Database` that counts the calls a store makes (each one a round trip)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        inner = getattr(self._db, name)
        if name not in (
            "execute",
            "execute_many",
            "fetch_one",
            "fetch_all",
            "fetch_value",
            "atomic",
        ):
            return inner

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return await inner(*args, **kwargs)

        return counted


async def test_a_turn_costs_one_select_and_one_unit(db: Database, open_db: OpenDb) -> None:
    counting = Counting(db)
    s = store_on(counting)  # type: ignore[arg-type]
    for i in range(3):
        session = await s.load(KEY, 1.0 + i)
        await s.append(KEY, m(f"q{i}"), m(f"a{i}"), f"m{i}", 1.0 + i)
        assert s.appended_over(KEY) is False  # the compactor's check: no read
    assert counting.calls == {"fetch_all": 3, "atomic": 3}
    assert [x.content for x in session.history] == ["q0", "a0", "q1", "a1"]
    await store_on(await open_db()).append(KEY, m("elsewhere"), m("ok"), "m9", 5.0)
    seen = await s.load(KEY, 6.0)  # another instance wrote: still one SELECT, all rows
    assert [x.content for x in seen.history][-2:] == ["elsewhere", "ok"]
    assert counting.calls == {"fetch_all": 4, "atomic": 3}


async def test_sqlite_a_cache_hit_reads_one_row_by_the_index_and_an_append_is_one_job(
    tmp_path: Path,
) -> None:
    db, statements = await traced(tmp_path / "roost.db")
    try:
        s = store_on(db)
        for i in range(20):
            await s.append(KEY, m(f"q{i}"), m(f"a{i}"), f"m{i}", 1.0)
        await s.load(KEY, 2.0)
        statements.clear()
        await s.load(KEY, 3.0)  # cached: the row only
        (load,) = statements
        plan = " ".join(str(r[-1]) for r in await db.fetch_all("EXPLAIN QUERY PLAN " + load))
        assert "SCAN" not in plan, plan
        rows = await db.fetch_all(load)
        assert len(rows) == 1 and rows[0][7] is None
        statements.clear()
        await s.append(KEY, m("q"), m("a"), "m", 4.0)
        kinds = [" ".join(x.split()[:2]) for x in statements]
        assert kinds == [
            "BEGIN IMMEDIATE",
            "INSERT INTO",
            "INSERT INTO",
            "INSERT INTO",
            "COMMIT",
        ], statements
    finally:
        await db.aclose()


async def test_postgresql_a_fold_waits_for_a_reset_elsewhere_and_then_does_nothing(
    backend: str, open_db: OpenDb
) -> None:
    """PostgreSQL (read committed): a fold's unit locks the session's row as it reads it,
    so a reset and a new conversation another instance is committing are waited for and
    seen (the fold does nothing), never half-applied to the new conversation's row."""
    if backend != "postgresql":
        pytest.skip("SQLite has one writer: a unit never interleaves with another")
    one, two, watcher = await open_db(), await open_db(), await open_db()
    s, other = store_on(one, 1000), store_on(two, 1000)
    for i in range(6):
        await s.append(KEY, *turn(i), float(i))
    plan = await s.fold_plan(KEY)
    assert plan is not None
    async with two.transaction():  # another instance's reset and new turns, not committed
        await two.fetch_one("SELECT turns FROM sessions FOR UPDATE")
        await two.execute("DELETE FROM session_messages")
        await two.execute("DELETE FROM sessions")
        for i in range(6):
            await other.append(KEY, *turn(10 + i), 20.0 + i)
        waiting = asyncio.create_task(s.fold(KEY, plan, m("about the old conversation")))
        while not await watcher.fetch_value(  # the fold waits on the row lock
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND datname = current_database()"
        ):
            assert not waiting.done(), waiting
            await asyncio.sleep(0.01)
    assert await asyncio.wait_for(waiting, HANG_S) is None
    session = await store_on(await open_db(), 1000).load(KEY, 30.0)
    assert session.summary == "" and session.turns == 6 and len(session.history) == 12
    assert session.chars == 6 * 208 and session.history[0].content.startswith("q10")


async def test_postgresql_a_reset_waits_for_an_append_elsewhere_and_archives_it(
    backend: str, open_db: OpenDb
) -> None:
    """PostgreSQL: a clear's unit locks the session's row as it reads it, so a turn another
    instance is committing is archived with the rest, not left behind without its row."""
    if backend != "postgresql":
        pytest.skip("SQLite has one writer: a unit never interleaves with another")
    one, two, watcher = await open_db(), await open_db(), await open_db()
    s, other = store_on(one), store_on(two)
    await s.append(KEY, m("first"), m("one"), "m1", 1.0)
    async with two.transaction():  # another instance's turn, not committed yet
        await other.append(KEY, m("second"), m("two"), "m2", 2.0)
        waiting = asyncio.create_task(s.reset(KEY, 3.0))
        while not await watcher.fetch_value(  # the reset waits on the row lock
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND datname = current_database()"
        ):
            assert not waiting.done(), waiting
            await asyncio.sleep(0.01)
    await asyncio.wait_for(waiting, HANG_S)
    assert await one.fetch_value("SELECT count(*) FROM session_messages") == 0
    (_, archived) = await s.archive.listing(KEY, 4.0)
    page = await s.archive.page(KEY, int(archived["id"]), None, 10, 4.0)
    assert page is not None and archived["turns"] == 2
    assert [x["text"] for x in page.messages] == ["first", "one", "second", "two"]


async def test_a_turns_end_is_one_unit_with_its_usage_and_turn_log(db: Database) -> None:
    """`append(also=...)`: the usage count and the turn-log row commit with the turn (a
    turn's end, `bridge.core.turn`); one of them failing leaves none of the three."""
    usage, log = UsageStore(db), TurnLog(db)
    count = partial(recorded, "local", "m", USAGE_DAY, Tokens(10, 2))
    row = partial(turn_recorded, "local", "web", "default", "m1", ["csv"], 5.0)
    await store_on(db).append(KEY, m("hi"), m("hello"), "m1", 100.0, also=(count, row))
    assert [(r.turns, r.tokens.total) for r in await usage.rows("local", USAGE_DAY, USAGE_DAY)] == [
        (1, 12)
    ]
    last = await log.last("local", "web", "default")
    assert last is not None and (last.msg_id, last.skills, last.graded) == ("m1", ["csv"], False)
    await db.execute("DROP TABLE turn_log")
    with pytest.raises(StorageError):
        await store_on(db).append(KEY, m("more"), m("ok"), "m2", 101.0, also=(count, row))
    assert (await store_on(db).load(KEY, 102.0)).turns == 1  # the turn rolled back with it
    assert [r.turns for r in await usage.rows("local", USAGE_DAY, USAGE_DAY)] == [1]


async def test_a_turns_rows_are_stored_column_by_column(db: Database) -> None:
    """What one append writes: the row counted up by the turn's characters (calls as stored
    text included), each message with its turn, calls, call id, msg_id and time, and what
    the person sent on the first message only."""
    call = ToolCallRequest("call_1", "me__numbers", m('{"n": 3}'))
    steps = (
        ChatMessage("assistant", m(""), (call,)),
        ChatMessage("tool", m("1 2 3"), (), "call_1"),
    )
    s = store_on(db, 10**6)
    await s.append(KEY, m("first"), m("one"), "m1", 10.0)
    await s.append(KEY, m("count"), m("done"), "m2", 20.0, steps, sent=m("count!"))
    rows = await db.fetch_all(
        "SELECT turn, role, content, tool_calls, tool_call_id, msg_id, at, meta"
        " FROM session_messages WHERE turn = 2 ORDER BY id",
        (),
    )
    calls = encode_calls((call,))
    assert rows == [
        (2, "user", "count", "", "", "m2", 20.0, "count!"),
        (2, "assistant", "", calls, "", "m2", 20.0, ""),
        (2, "tool", "1 2 3", "", "call_1", "m2", 20.0, ""),
        (2, "assistant", "done", "", "", "m2", 20.0, ""),
    ]
    row = await db.fetch_one("SELECT turns, chars, updated_at FROM sessions", ())
    assert row == (2, len("firstone") + len("count") + len(calls) + len("1 2 3done"), 20.0)
    loaded = await store_on(db, 10**6).load(KEY, 21.0)
    assert loaded.history[-4:] == (
        ChatMessage("user", "count"),
        *steps,
        ChatMessage("assistant", "done"),
    )
