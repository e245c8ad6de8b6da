"""A full disk refuses state changes with a clear reply and keeps serving reads.

A real full disk needs root (a loop device or tmpfs); the file writes are made
to fail at the I/O seam instead: `os.write` raises ENOSPC, as the kernel does
when a write finds no free block. The session store is a real SQLite database
made full with `PRAGMA max_page_count`, which fails exactly as a full disk
does (SQLITE_FULL, "database or disk is full").
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import Settings
from bridge.core.sessions import SessionKey
from bridge.types.audit_sink import MemoryAudit
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
        db = roost.sessions._db
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")
        deltas: list[str] = []

        async def on_delta(piece: str) -> None:
            deltas.append(piece)

        final = await roost.core.handle(web_msg("tell me a lot", 2), on_delta)
        assert final.kind == "answer"
        assert final.text.startswith(long_answer.strip())
        assert "could not store this exchange" in final.text
        assert GENERIC not in final.text
        assert "could not store this exchange" in "".join(deltas)
        history = roost.sessions.load(SessionKey("local", "web", "c1"), clock()).history
        assert [m.content for m in history] == ["hi", "first"], "not stored, and said so"
        assert "database or disk is full" in caplog.text, "the log names the real cause"
        # reads and later turns still work once there is room again
        db.execute("PRAGMA max_page_count = 1073741823")
        assert (await roost.core.handle(web_msg("again", 3))).text == "ok"
    finally:
        await roost.aclose()
