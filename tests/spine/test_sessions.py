"""Sessions: persistence, tool-call steps, the budget (folds and drops), idle expiry, reset."""

from __future__ import annotations

from pathlib import Path

from bridge.core.compaction import summary_message
from bridge.core.db import connect
from bridge.core.history import message_chars
from bridge.core.sessions import SessionKey, SessionStore
from bridge.types.backend import ChatMessage, ToolCallRequest
from tests.masking import m, masked_steps

KEY = SessionKey("local", "web", "default")
DAY = 86400.0


def store(path: Path, budget: int = 1000, idle_days: float = 7) -> SessionStore:
    return SessionStore(connect(path / "roost.db"), budget, idle_days * DAY)


def test_exchange_survives_a_new_connection(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.append(KEY, m("hi"), m("hello"), "m1", 100.0)
    again = store(tmp_path).load(KEY, 200.0)
    assert [(m.role, m.content) for m in again.history] == [("user", "hi"), ("assistant", "hello")]
    assert again.turns == 1 and again.chars == 7


def test_past_twice_the_budget_oldest_whole_turns_are_dropped_and_counted(tmp_path: Path) -> None:
    s = store(tmp_path, budget=1000)
    for i in range(9):  # 9 x 206 = 1854: over budget, waiting for a summary
        s.append(KEY, m(f"q{i} " + "x" * 100), m(f"a{i} " + "y" * 100), f"m{i}", 100.0 + i)
    assert s.load(KEY, 200.0).dropped == 0 and s.over_budget(KEY)
    s.append(KEY, m("q9 " + "x" * 100), m("a9 " + "y" * 100), "m9", 109.0)  # 2060 > 2 x 1000
    session = s.load(KEY, 200.0)
    assert session.chars <= 500
    assert session.turns == 10
    kept = len(session.history) // 2
    assert session.dropped == 10 - kept == 10 - session.kept
    assert session.history[0].content.startswith(f"q{10 - kept}")
    assert session.history[-1].content.startswith("a9")


def test_newest_turn_is_kept_even_if_alone_over_budget(tmp_path: Path) -> None:
    s = store(tmp_path, budget=1000)
    s.append(KEY, m("small"), m("reply"), "m0", 1.0)
    s.append(KEY, m("big " + "z" * 2000), m("ok"), "m1", 2.0)
    session = s.load(KEY, 3.0)
    assert [m.content[:3] for m in session.history] == ["big", "ok"]
    assert session.dropped == 1


def test_a_fold_replaces_the_oldest_turns_by_the_summary(tmp_path: Path) -> None:
    s = store(tmp_path, budget=1000)
    for i in range(6):
        s.append(KEY, m(f"q{i} " + "x" * 100), m(f"a{i} " + "y" * 100), f"m{i}", float(i))
    fold = s.fold_plan(KEY)
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
    after = s.fold(KEY, fold, m("They asked four questions."))
    session = store(tmp_path, budget=1000).load(KEY, 10.0)  # as stored, not as cached
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
    assert s.load(KEY, 10.0) == session
    assert s.fold_plan(KEY) is None  # within the budget now
    s.reset(KEY, 11.0)
    fresh = s.load(KEY, 12.0)
    assert fresh.history == () and fresh.summary == "" and fresh.summarised == 0


def test_a_fold_planned_before_a_reset_or_another_writer_does_nothing(tmp_path: Path) -> None:
    s, other = store(tmp_path, budget=1000), store(tmp_path, budget=1000)
    for i in range(6):
        s.append(KEY, m(f"q{i} " + "x" * 100), m(f"a{i} " + "y" * 100), f"m{i}", float(i))
    stale = s.fold_plan(KEY)
    assert stale is not None
    s.reset(KEY, 7.0)
    for i in range(6):
        s.append(KEY, m(f"n{i} " + "x" * 100), m(f"b{i} " + "y" * 100), f"n{i}", 8.0 + i)
    assert s.fold(KEY, stale, m("about the old conversation")) is None
    assert s.load(KEY, 20.0).summary == ""
    plan = s.fold_plan(KEY)
    assert plan is not None
    first = other.fold_plan(KEY)
    assert first is not None and other.drop(KEY, first) is not None  # another process won
    assert s.fold(KEY, plan, m("late")) is None
    session = s.load(KEY, 21.0)
    assert session.summary == "" and session.dropped == plan.plan.turns


def test_a_reset_within_the_same_second_still_voids_an_old_fold(tmp_path: Path) -> None:
    s = store(tmp_path, budget=1000)
    for i in range(6):  # the same sizes before and after the reset, at one clock value
        s.append(KEY, m(f"q{i} " + "x" * 100), m(f"a{i} " + "y" * 100), f"m{i}", 1.0)
    stale = s.fold_plan(KEY)
    assert stale is not None
    s.reset(KEY, 1.0)
    for i in range(6):
        s.append(KEY, m(f"n{i} " + "x" * 100), m(f"b{i} " + "y" * 100), f"n{i}", 1.0)
    assert s.fold(KEY, stale, m("a summary of what was reset")) is None
    assert s.load(KEY, 1.0).summary == ""


def test_tool_steps_are_stored_in_order_and_counted(tmp_path: Path) -> None:
    s = store(tmp_path, budget=1000)
    call = ToolCallRequest("call_1", "me__numbers", '{"n": 3}')
    steps = (
        ChatMessage("assistant", "", (call,)),
        ChatMessage("tool", "17, 42, 99", tool_call_id="call_1"),
    )
    s.append(KEY, m("three numbers please"), m("17, 42 and 99."), "m0", 1.0, masked_steps(steps))
    session = store(tmp_path).load(KEY, 2.0)
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


def test_rows_left_without_their_call_never_reach_the_history(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.append(KEY, m("q"), m("a"), "m0", 1.0)
    s._db.execute(  # a tool row whose assistant message is gone (an older roost, a bug)
        "INSERT INTO session_messages (tenant, channel, chat, turn, role, content,"
        " tool_call_id, at) VALUES ('local', 'web', 'default', 2, 'tool', 'orphan', 'call_9', 2.0)"
    )
    s._db.execute("UPDATE sessions SET turns=2")
    assert [m.role for m in store(tmp_path).load(KEY, 3.0).history] == ["user", "assistant"]


def test_idle_conversation_starts_fresh(tmp_path: Path) -> None:
    s = store(tmp_path, idle_days=7)
    s.append(KEY, m("old"), m("news"), "m0", 0.0)
    assert s.load(KEY, 6.9 * DAY).history
    fresh = s.load(KEY, 7.1 * DAY)
    assert fresh.history == () and fresh.expired and fresh.turns == 0


def test_reset_only_touches_its_chat(tmp_path: Path) -> None:
    s = store(tmp_path)
    other = SessionKey("local", "web", "other")
    s.append(KEY, m("a"), m("b"), "m0", 1.0)
    s.append(other, m("c"), m("d"), "m1", 1.0)
    s.reset(KEY, 2.0)
    assert s.load(KEY, 3.0).history == ()
    assert len(s.load(other, 3.0).history) == 2


def test_database_is_wal_and_private(tmp_path: Path) -> None:
    conn = connect(tmp_path / "roost.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (tmp_path / "roost.db").stat().st_mode & 0o077 == 0


def test_cached_history_matches_the_database(tmp_path: Path) -> None:
    cached = store(tmp_path, budget=1000)
    for i in range(60):
        cached.load(KEY, float(i))
        call = ToolCallRequest(f"c{i}", "me__x", "{}")
        steps = (
            ChatMessage("assistant", "", (call,)),
            ChatMessage("tool", "r" * i, tool_call_id=f"c{i}"),
        )
        cached.append(
            KEY,
            m(f"q{i} " + "x" * (i * 7 % 90)),
            m(f"a{i}"),
            f"m{i}",
            float(i),
            masked_steps(steps[: i % 3 and 2]),
        )
        if i % 5 == 0 and (fold := cached.fold_plan(KEY)) is not None:
            cached.fold(KEY, fold, m(f"summary {i}")) if i % 10 else cached.drop(KEY, fold)
        fresh = store(tmp_path, budget=1000).load(KEY, float(i))
        assert cached.load(KEY, float(i)) == fresh


def test_a_second_writer_is_seen_at_once(tmp_path: Path) -> None:
    daemon, script = store(tmp_path), store(tmp_path)
    daemon.append(KEY, m("from web"), m("ok"), "m0", 1.0)
    assert len(daemon.load(KEY, 2.0).history) == 2
    script.append(KEY, m("from roost send"), m("ok"), "m1", 3.0)
    assert [m.content for m in daemon.load(KEY, 4.0).history][-2] == "from roost send"
    script.reset(KEY, 5.0)
    assert daemon.load(KEY, 6.0).history == ()
    daemon.load(KEY, 6.5)
    script.append(KEY, m("after reset"), m("ok"), "m2", 7.0)
    assert [m.content for m in daemon.load(KEY, 8.0).history] == ["after reset", "ok"]
