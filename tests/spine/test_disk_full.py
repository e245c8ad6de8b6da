"""A full disk refuses state changes with a clear reply and keeps serving reads.

A real full disk needs root (a loop device or tmpfs); the file writes are made
to fail at the I/O seam instead: `os.write` raises ENOSPC, as the kernel does
when a write finds no free block. The database is the real SQLite one made
full with `PRAGMA max_page_count` (and, for the other writers, every free
page used up), which fails exactly as a full disk does (SQLITE_FULL,
"database or disk is full"). Every writer reaches the core's one handling
point (`bridge.core.diskfull`): a clear reply, reads go on, answers survive.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
from collections.abc import Iterator

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import Settings
from bridge.core.db import connect
from bridge.core.sessions import SessionKey
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import ModelRequest
from tests.conftest import Clock, ScriptedBackend, web_msg

GENERIC = "Nothing was lost"
FULL = "the disk is full; nothing was saved"


@contextlib.contextmanager
def full_disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def no_space(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m:
        m.setattr(os, "write", no_space)
        yield


async def say(roost: Roost, text: str, n: int) -> str:
    return (await roost.core.handle(web_msg(text, n))).text


async def test_remember_on_a_full_disk_says_so_and_saves_nothing(
    roost: Roost, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "Remembered" in await say(roost, "/remember I like tea", 1)
    with full_disk(monkeypatch):
        reply = await say(roost, "/remember I like coffee", 2)
        assert FULL in reply and GENERIC not in reply
        listing = await say(roost, "/memory", 3)  # reads keep working
    assert "tea" in listing and "coffee" not in listing
    memdir = roost.core._dirs_of("local").root / "memory"
    names = sorted(p.name for p in memdir.iterdir() if p.name.endswith(".md"))
    assert not any("coffee" in name for name in names), names
    assert not any(p.name.startswith(".") and "tmp" in p.name for p in memdir.iterdir())


async def test_profile_on_a_full_disk_refuses_set_and_rm_and_still_shows(
    roost: Roost, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "set" in await say(roost, "/profile set city Lisbon", 1)
    with full_disk(monkeypatch):
        for n, command in enumerate(("/profile set city Porto", "/profile rm city"), 2):
            reply = await say(roost, command, n)
            assert FULL in reply and GENERIC not in reply, reply
        shown = await say(roost, "/profile", 9)
    assert "Lisbon" in shown and "Porto" not in shown


async def test_an_answer_whose_session_write_fails_is_still_sent_with_a_note(
    settings: Settings, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    long_answer = "Here is the long answer. " * 400
    roost = await build(
        settings, backend=ScriptedBackend("first", long_answer), audit=MemoryAudit(), clock=clock
    )
    try:
        assert (await roost.core.handle(web_msg("hi", 1))).text == "first"
        db = roost.sessions._db  # the `Database` (its writer's own page cap)
        pages = await db.fetch_value("PRAGMA page_count")
        await db.execute(f"PRAGMA max_page_count = {pages}")
        deltas: list[str] = []

        async def on_delta(piece: str) -> None:
            deltas.append(piece)

        final = await roost.core.handle(web_msg("tell me a lot", 2), on_delta)
        assert final.kind == "answer"
        assert final.text.startswith(long_answer.strip())
        assert "could not store this exchange" in final.text
        assert GENERIC not in final.text
        assert "could not store this exchange" in "".join(deltas)
        history = (await roost.sessions.load(SessionKey("local", "web", "c1"), clock())).history
        assert [m.content for m in history] == ["hi", "first"], "not stored, and said so"
        assert "database or disk is full" in caplog.text, "the log names the real cause"
        # reads and later turns still work once there is room again
        await db.execute("PRAGMA max_page_count = 1073741823")
        assert (await roost.core.handle(web_msg("again", 3))).text == "ok"
    finally:
        await roost.aclose()


# -- the shared handling point: every other writer --------------------------------------------

DISK = "the disk is full, so this change could not be stored"


def fill_database(db: sqlite3.Connection) -> None:
    """Make the real database full: cap its pages, then use up every free one."""
    db.execute("CREATE TABLE IF NOT EXISTS _filler (b BLOB)")
    db.commit()
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")
    for size in (65536, 4096, 512, 64):
        with contextlib.suppress(sqlite3.OperationalError):
            while True:
                db.execute("INSERT INTO _filler VALUES (zeroblob(?))", (size,))
                db.commit()
        db.rollback()


async def fill_roost(roost: Roost) -> None:
    """`fill_database` through a connection of its own, and the same page cap on the
    `Database`'s writer (`max_page_count` is per connection)."""
    conn = connect(roost.settings.home / "roost.db")
    try:
        fill_database(conn)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    finally:
        conn.close()
    await roost.database.execute(f"PRAGMA max_page_count = {pages}")


async def free_roost(roost: Roost) -> None:
    await roost.database.execute("PRAGMA max_page_count = 1073741823")


async def test_schedule_writes_on_a_full_database_say_so_and_reads_go_on(roost: Roost) -> None:
    first = await say(roost, "/remind in 20m stretch " + "a" * 3500, 1)
    assert "⏰" in first or "remind" in first.lower(), first
    await fill_roost(roost)
    for n, command in enumerate(
        ("/remind in 30m walk " + "b" * 3500, "/every 1h drink water " + "c" * 3500), 2
    ):
        reply = await say(roost, command, n)
        assert DISK in reply and GENERIC not in reply, reply
    listing = await say(roost, "/jobs", 9)  # reads keep working
    assert "stretch" in listing and "walk" not in listing and "drink" not in listing
    await free_roost(roost)
    assert "walk" in await say(roost, "/remind in 30m walk", 10) or "walk" in await say(
        roost, "/jobs", 11
    )


async def test_an_answer_survives_a_full_disk_under_its_bookkeeping(
    settings: Settings, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit chain (a real one) cannot append: the answer still comes back whole."""
    roost = await build(settings, backend=ScriptedBackend("the whole answer"), clock=clock)
    try:
        with full_disk(monkeypatch):
            final = await roost.core.handle(web_msg("hello", 1))
        assert final.kind == "answer" and final.text == "the whole answer"
        history = (await roost.sessions.load(SessionKey("local", "web", "c1"), clock())).history
        assert [m.content for m in history] == ["hello", "the whole answer"]
    finally:
        await roost.aclose()


async def test_a_tool_that_meets_a_full_database_lets_the_model_answer(
    settings: Settings, clock: Clock
) -> None:
    """`schedule_create` cannot store its job: the model reads why and still answers."""
    seen: list[str] = []

    def after_tool(request: ModelRequest) -> str:
        seen.append(request.messages[-1].content)
        return "Sorry, I could not schedule that: the disk is full."

    call = [("schedule_create", json.dumps({"when": "in 20m", "text": "x" * 3500}))]
    backend = ScriptedBackend(call, after_tool)
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    try:
        assert (
            "stretch"
            in (await roost.core.handle(web_msg("/remind in 9m stretch " + "s" * 3500, 1))).text
        )
        await fill_roost(roost)
        final = await roost.core.handle(web_msg("remind me", 2))
        assert final.text.startswith("Sorry, I could not schedule that")
        (result,) = seen
        assert "the disk is full" in result and "do not retry" in result
        assert GENERIC not in final.text
    finally:
        await roost.aclose()


class _FailingObserver:
    """An observer whose bookkeeping write fails before or after the turn."""

    def __init__(self, exc: Exception, when: str) -> None:
        self.exc, self.when = exc, when

    async def before_turn(self, turn: object, session: object, events: object) -> None:
        if self.when == "before":
            raise self.exc

    async def after_turn(self, turn: object, result: object, events: object) -> None:
        if self.when == "after":
            raise self.exc


@pytest.mark.parametrize("when", ["before", "after"])
async def test_an_observer_write_on_a_full_disk_is_logged_and_the_answer_goes_on(
    roost: Roost, when: str, caplog: pytest.LogCaptureFixture
) -> None:
    turns = roost.core._turns
    kept = turns._observers
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    turns._observers = (*kept, _FailingObserver(full, when))
    reply = await say(roost, "hello", 1)
    assert GENERIC not in reply and FULL not in reply
    assert f"grading {when} the turn not written, the disk is full" in caplog.text
    turns._observers = (*kept, _FailingObserver(OSError(errno.EACCES, "denied"), when))
    assert GENERIC in await say(roost, "hello again", 2)  # any other error: the turn fails


async def test_a_followup_on_a_full_disk_is_answered_when_its_grading_mark_fails(
    settings: Settings, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ops38 H1: every message after a chat's first marks the previous turn graded; on a
    full disk (a real one: the WAL cannot grow) that write raised the storage layer's
    `StorageError`, which `_kept` let through, so the person got "Not saved: the disk is
    full" instead of the answer the model had already written (tokens spent)."""
    from bridge.skills.grades import TurnLog
    from bridge.storage.errors import StorageError

    LONG = "Here is the long answer. " * 400

    async def no_room(self: object, *row: str) -> None:
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as exc:
            raise StorageError(str(exc)) from exc

    roost = await build(
        settings, backend=ScriptedBackend("first", LONG), audit=MemoryAudit(), clock=clock
    )
    try:
        assert (await roost.core.handle(web_msg("hi", 1))).text == "first"
        db = roost.sessions._db
        pages = await db.fetch_value("PRAGMA page_count")
        await db.execute(f"PRAGMA max_page_count = {pages}")  # the end's unit cannot write
        monkeypatch.setattr(TurnLog, "mark_graded", no_room)  # nor the mark alone
        final = await roost.core.handle(web_msg("and now?", 2))
        assert final.kind == "answer" and final.text.startswith(LONG.strip()), final.text
        assert DISK not in final.text and GENERIC not in final.text
    finally:
        await roost.aclose()
