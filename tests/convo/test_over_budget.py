"""The compactor's check after a turn: `SessionStore.over_budget` right after `append`.

It answers from the size the append just wrote (no read); whatever changes the
session in between (a fold, a reset, an edit, a hard drop) makes it read the
row again, so the answer is always the stored row's, through real SQLite.
"""

from __future__ import annotations

from pathlib import Path

from bridge.core.db import connect
from bridge.core.sessions import SessionKey, SessionStore
from tests.masking import m

KEY = SessionKey("local", "web", "default")


def stored_over(path: Path, budget: int) -> bool:
    """The answer of a second store on its own connection (reads the row)."""
    return SessionStore(connect(path / "roost.db"), budget, 86_400).over_budget(KEY)


def test_after_each_append_the_answer_is_the_stored_rows(tmp_path: Path) -> None:
    s = SessionStore(connect(tmp_path / "roost.db"), 1000, 86_400)
    for i in range(12):
        s.append(KEY, m(f"q{i} " + "x" * 60), m(f"a{i} " + "y" * 60), f"m{i}", 100.0 + i)
        assert s.over_budget(KEY) == stored_over(tmp_path, 1000)
        assert s.over_budget(KEY) == stored_over(tmp_path, 1000)  # asked again: read
    assert s.over_budget(KEY)


def test_a_fold_an_edit_or_a_reset_after_the_append_is_seen(tmp_path: Path) -> None:
    db = connect(tmp_path / "roost.db")
    s = SessionStore(db, 1000, 86_400)
    for i in range(8):  # 8 x 206 = 1648: over the budget
        s.append(KEY, m(f"q{i} " + "x" * 100), m(f"a{i} " + "y" * 100), f"m{i}", 100.0 + i)
    fold = s.fold_plan(KEY)
    assert fold is not None
    s.append(KEY, m("q8 " + "x" * 100), m("a8 " + "y" * 100), "m8", 108.0)
    assert s.fold(KEY, fold, m("a short summary")) is not None  # the folded turns are as planned
    assert not s.over_budget(KEY) and not stored_over(tmp_path, 1000)
    s.append(KEY, m("q9 " + "x" * 900), m("a9"), "m9", 109.0)
    db.execute("UPDATE sessions SET chars = 0")  # an edit outside the store ...
    s.forget(KEY)  # ... which tells it so
    assert not s.over_budget(KEY) and not stored_over(tmp_path, 1000)
    s.append(KEY, m("q10 " + "x" * 2000), m("a10"), "m10", 110.0)
    s.reset(KEY, 112.0)
    assert not s.over_budget(KEY) and not stored_over(tmp_path, 1000)
