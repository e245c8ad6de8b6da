"""Failed turns (`bridge.core.turn_failures`) on both backends: recorded in one unit after
the newest session row, read back by another connection in place, at most `KEEP` per
conversation, forgotten per conversation and never another tenant's."""

from __future__ import annotations

from bridge.core.sessions import SessionKey
from bridge.core.turn_failures import FAILED_META, KEEP, TurnFailures
from bridge.storage.protocol import Database
from tests.masking import m
from tests.sessions_kit import store_on
from tests.storage.conftest import OpenDb

KEY = SessionKey("alice", "web", "c")
BOB = SessionKey("bob", "web", "c")


async def test_a_failed_turn_is_kept_in_place_and_seen_elsewhere(
    db: Database, open_db: OpenDb
) -> None:
    store = store_on(db)
    await store.append(KEY, m("hello"), m("hi"), "m1", 1.0)
    newest = await db.fetch_value("SELECT max(id) FROM session_messages")
    failures = TurnFailures(db)
    await failures.record(KEY, 7, "what now", '{"text":"what now"}', "The model is away.", 2.0)
    rows = await TurnFailures(await open_db()).between(7, "alice", 0, 2**62)
    assert [(r.after, r.role, r.text, r.meta) for r in rows] == [
        (newest, "user", "what now", '{"text":"what now"}'),
        (newest, "assistant", "The model is away.", FAILED_META),
    ]
    assert await failures.between(7, "alice", 0, newest) == [], "placed after the newest row"
    assert await failures.between(7, "bob", 0, 2**62) == [], "another tenant's conversation"


async def test_at_most_keep_per_conversation_and_forget_is_scoped(db: Database) -> None:
    failures = TurnFailures(db)
    for i in range(KEEP + 3):
        await failures.record(KEY, 1, f"q{i}", "{}", "away", float(i))
    await failures.record(BOB, 2, "bob's", "{}", "away", 1.0)
    kept = await failures.between(1, "alice", 0, 2**62)
    assert len(kept) == 2 * KEEP and kept[0].text == "q3", "the oldest went"
    await failures.forget(1, "alice")
    assert await failures.between(1, "alice", 0, 2**62) == []
    assert len(await failures.between(2, "bob", 0, 2**62)) == 2
