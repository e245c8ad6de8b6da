"""The compactor's check after a turn: `SessionStore.over_budget` right after `append`.

It answers from the size the append just wrote (no read); whatever changes the
session in between (a fold, a reset, an edit, a hard drop) makes it read the
row again, so the answer is always the stored row's, through real SQLite.
"""

from __future__ import annotations

from bridge.core.sessions import SessionKey
from tests.masking import m
from tests.sessions_kit import OpenStore, open_store

__all__ = ["open_store"]  # the fixture
KEY = SessionKey("local", "web", "default")


async def stored_over(open_store: OpenStore, budget: int) -> bool:
    """The answer of a second store on its own connection (reads the row)."""
    return await (await open_store(budget, 86_400)).over_budget(KEY)


async def test_after_each_append_the_answer_is_the_stored_rows(open_store: OpenStore) -> None:
    s = await open_store(1000, 86_400)
    for i in range(12):
        await s.append(KEY, m(f"q{i} " + "x" * 60), m(f"a{i} " + "y" * 60), f"m{i}", 100.0 + i)
        assert await s.over_budget(KEY) == await stored_over(open_store, 1000)
        assert await s.over_budget(KEY) == await stored_over(open_store, 1000)  # again: read
    assert await s.over_budget(KEY)


async def test_a_fold_an_edit_or_a_reset_after_the_append_is_seen(open_store: OpenStore) -> None:
    s = await open_store(1000, 86_400)
    for i in range(8):  # 8 x 206 = 1648: over the budget
        await s.append(KEY, m(f"q{i} " + "x" * 100), m(f"a{i} " + "y" * 100), f"m{i}", 100.0 + i)
    fold = await s.fold_plan(KEY)
    assert fold is not None
    await s.append(KEY, m("q8 " + "x" * 100), m("a8 " + "y" * 100), "m8", 108.0)
    assert await s.fold(KEY, fold, m("a short summary")) is not None  # folded turns as planned
    assert not await s.over_budget(KEY) and not await stored_over(open_store, 1000)
    await s.append(KEY, m("q9 " + "x" * 900), m("a9"), "m9", 109.0)
    await s._db.execute("UPDATE sessions SET chars = 0")  # an edit outside the store ...
    s.forget(KEY)  # ... which tells it so
    assert not await s.over_budget(KEY) and not await stored_over(open_store, 1000)
    await s.append(KEY, m("q10 " + "x" * 2000), m("a10"), "m10", 110.0)
    await s.reset(KEY, 112.0)
    assert not await s.over_budget(KEY) and not await stored_over(open_store, 1000)
