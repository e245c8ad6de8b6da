"""`TableChanges` and `TenantRows`: the versions the prompt's memo keeps of a tenant's
mirrored rows. The loader is a function here, so a read can be held open while the store
writes (the race the mirror must not lose); the stores over real databases are in
tests/storage (test_chat_settings_store.py, test_grades_store.py, test_style_store.py,
test_prompt_rows.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from bridge.loadout.db_changes import TableChanges


class Rows:
    """A table's rows per tenant, read by a loader that can be held at its await."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[str, ...]] = {}
        self.reads = 0
        self.hold: asyncio.Event | None = None

    async def load(self, tenant: str) -> tuple[str, ...]:
        self.reads += 1
        seen = self.rows.get(tenant, ())
        if self.hold is not None:
            await self.hold.wait()
        return seen


def watched() -> TableChanges:
    """Versions as while `watch` runs (nothing notifies here: the test moves
    `generation` where a notify would)."""
    changes = TableChanges(db=None)  # type: ignore[arg-type]
    changes.watching = True
    return changes


def changes_with(rows: Rows, table: str = "t") -> tuple[TableChanges, Any]:
    changes = watched()
    return changes, changes.mirror(table, rows.load)


async def test_a_tenant_is_vouched_for_once_read_and_only_its_writes_move_it() -> None:
    rows = Rows()
    changes, mirror = changes_with(rows)
    assert changes.token(("t",), "alice") is None
    assert changes.token(("other",), "alice") is None  # not mirrored at all
    await changes.prepare("alice")
    await changes.prepare("bob")
    alice, bob = changes.token(("t",), "alice"), changes.token(("t",), "bob")
    assert alice is not None and bob is not None
    await changes.prepare("alice")
    assert rows.reads == 2  # current: not read again
    mirror.wrote("alice", lambda old: (*old, "x"))
    assert mirror.peek("alice") == ("x",)
    assert changes.token(("t",), "alice") != alice
    assert changes.token(("t",), "bob") == bob


async def test_a_notify_makes_entries_stale_and_a_changed_read_moves_the_version() -> None:
    rows = Rows()
    changes, mirror = changes_with(rows)
    await changes.prepare("alice")
    token = changes.token(("t",), "alice")
    changes.generation += 1  # what `watch` does at a notify
    assert not mirror.current("alice")
    await changes.prepare("alice")
    assert rows.reads == 2 and changes.token(("t",), "alice") == token  # same rows
    rows.rows["alice"] = ("y",)
    changes.generation += 1
    await changes.prepare("alice")
    assert mirror.peek("alice") == ("y",) and changes.token(("t",), "alice") != token


async def test_a_read_overtaken_by_a_write_of_this_process_is_not_kept() -> None:
    rows = Rows()
    changes, mirror = changes_with(rows)
    await changes.prepare("alice")
    changes.generation += 1
    rows.hold = asyncio.Event()
    reading = asyncio.ensure_future(changes.prepare("alice"))  # reads the old rows ...
    while rows.reads < 2:
        await asyncio.sleep(0)
    rows.rows["alice"] = ("new",)
    mirror.wrote("alice", lambda old: ("new",))  # ... while the store writes
    rows.hold.set()
    await reading
    assert mirror.peek("alice") == ("new",)  # the write's entry, not the older read


async def test_dropping_an_entry_reads_it_again_and_the_mirror_is_bounded() -> None:
    rows = Rows()
    changes = watched()
    mirror = changes.mirror("t", rows.load, remember=2)
    for tenant in ("a", "b"):
        await changes.prepare(tenant)
    mirror.wrote("a")  # dropped
    assert mirror.peek("a") is None and changes.token(("t",), "a") is None
    await changes.prepare("a")
    await changes.prepare("c")  # the least recently used ("b") goes
    assert mirror.peek("b") is None and mirror.peek("a") == () and mirror.peek("c") == ()


async def test_without_a_watch_nothing_is_current() -> None:
    """A store made for one command (no watch): every read goes to the database."""
    rows = Rows()
    changes = TableChanges(db=None)  # type: ignore[arg-type]
    mirror = changes.mirror("t", rows.load)
    await mirror.get("alice")
    await mirror.get("alice")
    await changes.prepare("alice")
    assert rows.reads == 3 and mirror.peek("alice") == ()
