"""Sessions: persistence, tool-call steps, the budget (folds and drops), idle expiry, reset."""

from __future__ import annotations

from pathlib import Path

from bridge.core.compaction import summary_message
from bridge.core.db import connect
from bridge.core.history import message_chars
from bridge.core.sessions import SessionKey
from bridge.types.backend import ChatMessage, ToolCallRequest
from tests.masking import m, masked_steps
from tests.sessions_kit import DAY, OpenStore, open_store

__all__ = ["open_store"]  # the fixture
KEY = SessionKey("local", "web", "default")


async def test_exchange_survives_a_new_connection(open_store: OpenStore) -> None:
    s = await open_store()
    await s.append(KEY, m("hi"), m("hello"), "m1", 100.0)
    again = await (await open_store()).load(KEY, 200.0)
    assert [(m.role, m.content) for m in again.history] == [("user", "hi"), ("assistant", "hello")]
    assert again.turns == 1 and again.chars == 7


async def test_past_twice_the_budget_oldest_whole_turns_are_dropped_and_counted(
    open_store: OpenStore,
) -> None:
    s = await open_store(budget=1000)
    for i in range(9):  # 9 x 206 = 1854: over budget, waiting for a summary
        await s.append(KEY, m(f"q{i} " + "x" * 100), m(f"a{i} " + "y" * 100), f"m{i}", 100.0 + i)
    assert (await s.load(KEY, 200.0)).dropped == 0 and await s.over_budget(KEY)
    await s.append(KEY, m("q9 " + "x" * 100), m("a9 " + "y" * 100), "m9", 109.0)  # 2060 > 2 x 1000
    session = await s.load(KEY, 200.0)
    assert session.chars <= 500
    assert session.turns == 10
    kept = len(session.history) // 2
    assert session.dropped == 10 - kept == 10 - session.kept
    assert session.history[0].content.startswith(f"q{10 - kept}")
    assert session.history[-1].content.startswith("a9")


async def test_newest_turn_is_kept_even_if_alone_over_budget(open_store: OpenStore) -> None:
    s = await open_store(budget=1000)
    await s.append(KEY, m("small"), m("reply"), "m0", 1.0)
    await s.append(KEY, m("big " + "z" * 2000), m("ok"), "m1", 2.0)
    session = await s.load(KEY, 3.0)
    assert [m.content[:3] for m in session.history] == ["big", "ok"]
    assert session.dropped == 1


async def test_a_fold_replaces_the_oldest_turns_by_the_summary(open_store: OpenStore) -> None:
    s = await open_store(budget=1000)
    for i in range(6):
        await s.append(KEY, m(f"q{i} " + "x" * 100), m(f"a{i} " + "y" * 100), f"m{i}", float(i))
    fold = await s.fold_plan(KEY)
    assert fold is not None and fold.plan.turns == 4 and fold.chars_before == 6 * 206
    assert [m.content[:2] for m in fold.messages] == [
        "q0",
        "a0",
        "q1",
        "a1",
        "q2",
        "a2",
        "q3",
        "a3",
    ]
    after = await s.fold(KEY, fold, m("They asked four questions."))
    session = await (await open_store(budget=1000)).load(KEY, 10.0)  # as stored, not as cached
    assert (
        after
        == session.chars
        == 2 * 206 + len(summary_message("They asked four questions.").content)
    )
    assert session.history[0] == summary_message("They asked four questions.")
    assert [m.content[:2] for m in session.history[1:]] == ["q4", "a4", "q5", "a5"]
    assert (session.summary, session.summarised, session.kept, session.dropped) == (
        "They asked four questions.",
        4,
        2,
        0,
    )
    assert await s.load(KEY, 10.0) == session
    assert await s.fold_plan(KEY) is None  # within the budget now
    await s.reset(KEY, 11.0)
    fresh = await s.load(KEY, 12.0)
    assert fresh.history == () and fresh.summary == "" and fresh.summarised == 0


async def test_a_fold_planned_before_a_reset_or_another_writer_does_nothing(
    open_store: OpenStore,
) -> None:
    s, other = await open_store(budget=1000), await open_store(budget=1000)
    for i in range(6):
        await s.append(KEY, m(f"q{i} " + "x" * 100), m(f"a{i} " + "y" * 100), f"m{i}", float(i))
    stale = await s.fold_plan(KEY)
    assert stale is not None
    await s.reset(KEY, 7.0)
    for i in range(6):
        await s.append(KEY, m(f"n{i} " + "x" * 100), m(f"b{i} " + "y" * 100), f"n{i}", 8.0 + i)
    assert await s.fold(KEY, stale, m("about the old conversation")) is None
    assert (await s.load(KEY, 20.0)).summary == ""
    plan = await s.fold_plan(KEY)
    assert plan is not None
    first = await other.fold_plan(KEY)
    assert first is not None and await other.drop(KEY, first) is not None  # another process won
    assert await s.fold(KEY, plan, m("late")) is None
    session = await s.load(KEY, 21.0)
    assert session.summary == "" and session.dropped == plan.plan.turns


async def test_a_reset_within_the_same_second_still_voids_an_old_fold(
    open_store: OpenStore,
) -> None:
    s = await open_store(budget=1000)
    for i in range(6):  # the same sizes before and after the reset, at one clock value
        await s.append(KEY, m(f"q{i} " + "x" * 100), m(f"a{i} " + "y" * 100), f"m{i}", 1.0)
    stale = await s.fold_plan(KEY)
    assert stale is not None
    await s.reset(KEY, 1.0)
    for i in range(6):
        await s.append(KEY, m(f"n{i} " + "x" * 100), m(f"b{i} " + "y" * 100), f"n{i}", 1.0)
    assert await s.fold(KEY, stale, m("a summary of what was reset")) is None
    assert (await s.load(KEY, 1.0)).summary == ""


async def test_tool_steps_are_stored_in_order_and_counted(open_store: OpenStore) -> None:
    s = await open_store(budget=1000)
    call = ToolCallRequest("call_1", "me__numbers", '{"n": 3}')
    steps = (
        ChatMessage("assistant", "", (call,)),
        ChatMessage("tool", "17, 42, 99", tool_call_id="call_1"),
    )
    await s.append(
        KEY, m("three numbers please"), m("17, 42 and 99."), "m0", 1.0, masked_steps(steps)
    )
    session = await (await open_store()).load(KEY, 2.0)
    assert session.history == (
        ChatMessage("user", "three numbers please"),
        *steps,
        ChatMessage("assistant", "17, 42 and 99."),
    )
    assert session.chars == sum(map(message_chars, session.history))
    last = session.last_exchange()
    assert last is not None and [m.content for m in last] == [
        "three numbers please",
        "17, 42 and 99.",
    ]


async def test_rows_left_without_their_call_never_reach_the_history(open_store: OpenStore) -> None:
    s = await open_store()
    await s.append(KEY, m("q"), m("a"), "m0", 1.0)
    await s._db.execute(  # a tool row whose assistant message is gone (an older roost, a bug)
        "INSERT INTO session_messages (tenant, channel, chat, turn, role, content,"
        " tool_call_id, at) VALUES ('local', 'web', 'default', 2, 'tool', 'orphan', 'call_9', 2.0)"
    )
    await s._db.execute("UPDATE sessions SET turns=2")
    assert [m.role for m in (await (await open_store()).load(KEY, 3.0)).history] == [
        "user",
        "assistant",
    ]


async def test_idle_conversation_starts_fresh(open_store: OpenStore) -> None:
    s = await open_store(idle_s=7 * DAY)
    await s.append(KEY, m("old"), m("news"), "m0", 0.0)
    assert (await s.load(KEY, 6.9 * DAY)).history
    fresh = await s.load(KEY, 7.1 * DAY)
    assert fresh.history == () and fresh.expired and fresh.turns == 0


async def test_reset_only_touches_its_chat(open_store: OpenStore) -> None:
    s = await open_store()
    other = SessionKey("local", "web", "other")
    await s.append(KEY, m("a"), m("b"), "m0", 1.0)
    await s.append(other, m("c"), m("d"), "m1", 1.0)
    await s.reset(KEY, 2.0)
    assert (await s.load(KEY, 3.0)).history == ()
    assert len((await s.load(other, 3.0)).history) == 2


def test_database_is_wal_and_private(tmp_path: Path) -> None:
    conn = connect(tmp_path / "roost.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (tmp_path / "roost.db").stat().st_mode & 0o077 == 0


async def test_cached_history_matches_the_database(open_store: OpenStore) -> None:
    cached = await open_store(budget=1000)
    for i in range(60):
        await cached.load(KEY, float(i))
        call = ToolCallRequest(f"c{i}", "me__x", "{}")
        steps = (
            ChatMessage("assistant", "", (call,)),
            ChatMessage("tool", "r" * i, tool_call_id=f"c{i}"),
        )
        await cached.append(
            KEY,
            m(f"q{i} " + "x" * (i * 7 % 90)),
            m(f"a{i}"),
            f"m{i}",
            float(i),
            masked_steps(steps[: i % 3 and 2]),
        )
        if i % 5 == 0 and (fold := await cached.fold_plan(KEY)) is not None:
            if i % 10:
                await cached.fold(KEY, fold, m(f"summary {i}"))
            else:
                await cached.drop(KEY, fold)
        fresh = await (await open_store(budget=1000)).load(KEY, float(i))
        assert await cached.load(KEY, float(i)) == fresh


async def test_a_second_writer_is_seen_at_once(open_store: OpenStore) -> None:
    daemon, script = await open_store(), await open_store()
    await daemon.append(KEY, m("from web"), m("ok"), "m0", 1.0)
    assert len((await daemon.load(KEY, 2.0)).history) == 2
    await script.append(KEY, m("from roost send"), m("ok"), "m1", 3.0)
    assert [m.content for m in (await daemon.load(KEY, 4.0)).history][-2] == "from roost send"
    await script.reset(KEY, 5.0)
    assert (await daemon.load(KEY, 6.0)).history == ()
    await daemon.load(KEY, 6.5)
    await script.append(KEY, m("after reset"), m("ok"), "m2", 7.0)
    assert [m.content for m in (await daemon.load(KEY, 8.0)).history] == ["after reset", "ok"]
