"""The prompt's rows from the database, as the daemon wires them, on both backends: a chat
setting, a skill grade or a style bullet written through another connection (a `roost`
command, another instance) shows in the next prompt once its notify arrived, and a
prompt with nothing changed runs no statement at all."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bridge.app.loadout import Loadout, build_loadout
from bridge.core.config import Settings
from bridge.core.filecache import FileCache
from bridge.loadout.chat_settings import ChatSettings
from bridge.loadout.db_changes import TableChanges, watching
from bridge.skills.grades import SkillGrades
from bridge.skills.view import GradedSkills
from bridge.storage.protocol import Database
from bridge.style.rules import Counts
from bridge.style.store import StyleStore
from bridge.style.view import LearnedStyle
from bridge.types.audit_sink import NullAudit
from bridge.types.tenant_dirs import TenantDirs
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced
from tests.waits import until


async def wired(db: Database, settings: Settings) -> tuple[Loadout, TableChanges]:
    """The loadout over `db` as `bridge.app.wiring` makes it: one `TableChanges` shared
    by the chat settings, the grades and the style store."""
    changes = TableChanges(db)
    chats = ChatSettings(db, changes)
    await chats.load()
    files = FileCache()
    lo = build_loadout(
        settings,
        chats,
        NullAudit(),
        skills=GradedSkills(SkillGrades(db, changes), files),
        style=LearnedStyle(StyleStore(db, changes)),
        files=files,
    )
    return lo, changes


async def prompt(lo: Loadout, dirs: TenantDirs, msg: str = "m1") -> str:
    """What a turn does: `prepare` (the `PromptRows` observer), then the prompt."""
    await lo.prompt.prepare(dirs.tenant)
    return lo.prompt.render(dirs, "web", "c1", msg, 1_800_000_000.0).text


async def test_another_connections_writes_show_in_the_next_prompt(
    open_db: OpenDb, settings: Settings
) -> None:
    mine, theirs = await open_db(), await open_db()
    lo, changes = await wired(mine, settings)
    assert lo.chats is not None
    stops = [watching(lo.chats), watching(changes)]
    try:
        dirs = TenantDirs.of(settings.home, "alice").ensure()
        dirs.skills.mkdir(parents=True, exist_ok=True)
        (dirs.skills / "deploy.md").write_text("---\nname: deploy\ndescription: ships it\n---\n")
        before = await prompt(lo, dirs)
        assert "ships it" in before and "tool smith" not in before
        assert await prompt(lo, dirs) == before

        # a persona chosen in another process
        await ChatSettings(theirs).set("alice", "web", "c1", "persona", "forge")
        await until(
            lambda: lo.chats.get("alice", "web", "c1", "persona") == "forge",  # type: ignore[union-attr]
            "the other connection's persona in the daemon's mirror",
        )
        assert "tool smith" in await prompt(lo, dirs)

        # a skill graded down to 0 there: no longer offered here
        generation = changes.generation
        other = SkillGrades(theirs)
        for _ in range(2):
            await other.apply("alice", "deploy", "rejection", 1.0)
        await until(lambda: changes.generation > generation, "the grades' notify")
        assert "ships it" not in await prompt(lo, dirs)

        # a style bullet promoted there (`roost style sweep`): shown here
        style = StyleStore(theirs)
        bullet = await style.add_candidate("alice", "deploy", "Say WHICH host.", Counts(6, 3), 1)
        generation = changes.generation
        await style.update(bullet.id, 2, state="live", live_since_ms=2)
        await until(lambda: changes.generation > generation, "the style store's notify")
        assert "Say WHICH host." in await prompt(lo, dirs)
    finally:
        for stop in stops:
            await stop()


async def test_an_unchanged_prompt_runs_no_statement(
    backend: str, tmp_path: Path, settings: Settings
) -> None:
    """The memo's proof is in process: a prompt of a turn where nothing changed (and its
    `prepare`) sends nothing to the database (SQLite's trace)."""
    if backend != "sqlite":
        pytest.skip("the statements SQLite ran")
    database, statements = await traced(tmp_path / "roost.db")
    try:
        lo, changes = await wired(database, settings)
        stop = watching(changes)
        await until(lambda: changes.watching, "the watch")
        dirs = TenantDirs.of(settings.home, "alice").ensure()
        first = await prompt(lo, dirs)
        polled = ("PRAGMA data_version", "SELECT topic, n FROM storage_notify")
        ran = lambda: [s for s in statements if s not in polled]  # noqa: E731

        for _ in range(100):  # the watch may still be catching up with the first prompt's
            statements.clear()  # writes on a busy machine: a prompt then reads them once
            await prompt(lo, dirs)
            if not ran():
                break
            await asyncio.sleep(0.01)
        statements.clear()
        for n in range(5):
            assert await prompt(lo, dirs, f"m{n}") == first
        await stop()
        assert ran() == []
    finally:
        await database.aclose()
