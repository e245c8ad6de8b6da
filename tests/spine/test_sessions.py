"""Sessions: persistence, the character budget, idle expiry and reset."""

from __future__ import annotations

from pathlib import Path

from bridge.core.db import connect
from bridge.core.sessions import SessionKey, SessionStore

KEY = SessionKey("local", "web", "default")
DAY = 86400.0


def store(path: Path, budget: int = 1000, idle_days: float = 7) -> SessionStore:
    return SessionStore(connect(path / "roost.db"), budget, idle_days * DAY)


def test_exchange_survives_a_new_connection(tmp_path: Path) -> None:
    s = store(tmp_path)
    s.append(KEY, "hi", "hello", "m1", 100.0)
    again = store(tmp_path).load(KEY, 200.0)
    assert [(m.role, m.content) for m in again.history] == [("user", "hi"), ("assistant", "hello")]
    assert again.turns == 1 and again.chars == 7


def test_budget_drops_oldest_whole_turns_and_counts_them(tmp_path: Path) -> None:
    s = store(tmp_path, budget=1000)
    for i in range(10):
        s.append(KEY, f"q{i} " + "x" * 100, f"a{i} " + "y" * 100, f"m{i}", 100.0 + i)
    session = s.load(KEY, 200.0)
    assert session.chars <= 1000
    assert session.turns == 10
    kept = len(session.history) // 2
    assert session.dropped == 10 - kept
    assert session.history[0].content.startswith(f"q{10 - kept}")
    assert session.history[-1].content.startswith("a9")


def test_newest_turn_is_kept_even_if_alone_over_budget(tmp_path: Path) -> None:
    s = store(tmp_path, budget=1000)
    s.append(KEY, "small", "reply", "m0", 1.0)
    s.append(KEY, "big " + "z" * 2000, "ok", "m1", 2.0)
    session = s.load(KEY, 3.0)
    assert [m.content[:3] for m in session.history] == ["big", "ok"]
    assert session.dropped == 1


def test_idle_conversation_starts_fresh(tmp_path: Path) -> None:
    s = store(tmp_path, idle_days=7)
    s.append(KEY, "old", "news", "m0", 0.0)
    assert s.load(KEY, 6.9 * DAY).history
    fresh = s.load(KEY, 7.1 * DAY)
    assert fresh.history == () and fresh.expired and fresh.turns == 0


def test_reset_only_touches_its_chat(tmp_path: Path) -> None:
    s = store(tmp_path)
    other = SessionKey("local", "web", "other")
    s.append(KEY, "a", "b", "m0", 1.0)
    s.append(other, "c", "d", "m1", 1.0)
    s.reset(KEY, 2.0)
    assert s.load(KEY, 3.0).history == ()
    assert len(s.load(other, 3.0).history) == 2


def test_database_is_wal_and_private(tmp_path: Path) -> None:
    conn = connect(tmp_path / "roost.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (tmp_path / "roost.db").stat().st_mode & 0o077 == 0


def test_cached_history_matches_the_database(tmp_path: Path) -> None:
    cached = store(tmp_path, budget=1000)
    for i in range(40):
        cached.load(KEY, float(i))
        cached.append(KEY, f"q{i} " + "x" * (i * 7 % 90), f"a{i}", f"m{i}", float(i))
        fresh = store(tmp_path, budget=1000).load(KEY, float(i))
        assert cached.load(KEY, float(i)).history == fresh.history


def test_a_second_writer_is_seen_at_once(tmp_path: Path) -> None:
    daemon, script = store(tmp_path), store(tmp_path)
    daemon.append(KEY, "from web", "ok", "m0", 1.0)
    assert len(daemon.load(KEY, 2.0).history) == 2
    script.append(KEY, "from roost send", "ok", "m1", 3.0)
    assert [m.content for m in daemon.load(KEY, 4.0).history][-2] == "from roost send"
    script.reset(KEY, 5.0)
    assert daemon.load(KEY, 6.0).history == ()
    daemon.load(KEY, 6.5)
    script.append(KEY, "after reset", "ok", "m2", 7.0)
    assert [m.content for m in daemon.load(KEY, 8.0).history] == ["after reset", "ok"]
