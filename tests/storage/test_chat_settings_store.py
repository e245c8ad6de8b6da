"""The chat settings store (`bridge.loadout.chat_settings`) on both backends: per-chat
choices, tenant isolation, the whole-table mirror every synchronous reader reads (kept by
the store's own writes before their await returns, read again when another connection
writes) and the versions the prompt's memo keeps; every write one statement."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bridge.loadout.chat_settings import ChatSettings, NotLoaded
from bridge.loadout.db_changes import TableChanges, watching
from bridge.storage.protocol import Database
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced
from tests.waits import until


async def loaded(db: Database, changes: TableChanges | None = None) -> ChatSettings:
    chats = ChatSettings(db, changes)
    await chats.load()
    return chats


async def test_a_choice_is_set_read_and_cleared_per_chat_and_tenant(db: Database) -> None:
    chats = await loaded(db)
    await chats.set("alice", "web", "c1", "persona", "forge")
    await chats.set("alice", "web", "c1", "audience", "my students")
    await chats.set("alice", "web", "c2", "persona", "concise")
    await chats.set("bob", "web", "c1", "persona", "mine")
    assert chats.get_all("alice", "web", "c1") == {"persona": "forge", "audience": "my students"}
    assert chats.get("alice", "web", "c2", "persona") == "concise"
    assert chats.get("alice", "telegram", "c1", "persona") is None
    assert chats.get("bob", "web", "c1", "persona") == "mine"
    await chats.set("alice", "web", "c1", "persona", "concise")  # the upsert
    assert chats.get("alice", "web", "c1", "persona") == "concise"
    assert await chats.clear("alice", "web", "c1", "persona") is True
    assert await chats.clear("alice", "web", "c1", "persona") is False
    assert chats.get_all("alice", "web", "c1") == {"audience": "my students"}
    fresh = await loaded(db)  # what the table holds equals the mirror
    for tenant, channel, chat in (
        ("alice", "web", "c1"),
        ("alice", "web", "c2"),
        ("bob", "web", "c1"),
    ):
        assert fresh.get_all(tenant, channel, chat) == chats.get_all(tenant, channel, chat)
    rows = await db.fetch_all("SELECT tenant, key, value FROM chat_settings ORDER BY 1, 2, 3")
    assert rows == [
        ("alice", "audience", "my students"),
        ("alice", "persona", "concise"),
        ("bob", "persona", "mine"),
    ]


async def test_a_read_before_load_is_a_wiring_error(db: Database) -> None:
    with pytest.raises(NotLoaded):
        ChatSettings(db).get("alice", "web", "c1", "persona")


async def test_a_write_moves_only_its_tenants_version_before_its_await_returns(
    db: Database,
) -> None:
    changes = TableChanges(db)
    chats = await loaded(db, changes)
    before = {t: changes.token(("chat_settings",), t) for t in ("alice", "bob")}
    assert before["alice"] is not None  # the whole table is mirrored: every tenant held
    write = asyncio.ensure_future(chats.set("alice", "web", "c1", "persona", "forge"))
    await write
    assert chats.get("alice", "web", "c1", "persona") == "forge"
    assert changes.token(("chat_settings",), "alice") != before["alice"]
    assert changes.token(("chat_settings",), "bob") == before["bob"]
    seen = changes.token(("chat_settings",), "alice")
    await chats.set("alice", "web", "c1", "persona", "forge")  # the same value: no change
    assert changes.token(("chat_settings",), "alice") == seen
    await chats.load()  # read again, equal: the version stays (the memo keeps its parts)
    assert changes.token(("chat_settings",), "alice") == seen


async def test_another_connections_write_reaches_the_mirror(open_db: OpenDb) -> None:
    """`roost` commands or another instance: their notify makes the daemon's store read the
    table again (SQLite: the data_version poll; PostgreSQL: LISTEN/NOTIFY)."""
    daemon_db, other_db = await open_db(), await open_db()
    changes = TableChanges(daemon_db)
    daemon = await loaded(daemon_db, changes)
    stop = watching(daemon)
    try:
        other = await loaded(other_db)
        seen = changes.token(("chat_settings",), "alice")
        await other.set("alice", "telegram", "t1", "persona", "forge")
        await until(
            lambda: daemon.get("alice", "telegram", "t1", "persona") == "forge",
            "the other connection's choice in the daemon's mirror",
        )
        assert changes.token(("chat_settings",), "alice") != seen
        await other.clear("alice", "telegram", "t1", "persona")
        await until(
            lambda: daemon.get("alice", "telegram", "t1", "persona") is None,
            "the other connection's clear in the daemon's mirror",
        )
    finally:
        await stop()


async def test_every_write_is_one_statement_and_the_notify(backend: str, tmp_path: Path) -> None:
    """SQLite's statements: no BEGIN, one statement per write, then the notify's."""
    if backend != "sqlite":
        pytest.skip("the statements SQLite ran")
    database, statements = await traced(tmp_path / "roost.db")
    try:
        chats = await loaded(database)
        statements.clear()
        await chats.set("alice", "web", "c1", "persona", "forge")
        await chats.clear("alice", "web", "c1", "persona")
        await chats.clear("alice", "web", "c1", "persona")  # nothing gone: no notify
        chats.get_all("alice", "web", "c1")  # a read: the mirror, no statement
    finally:
        await database.aclose()
    ran = [s.split()[0].upper() for s in statements]
    assert "BEGIN" not in ran
    assert [s for s in ran if s in ("INSERT", "DELETE", "SELECT")] == [
        "INSERT",  # the choice
        "INSERT",  # storage_notify
        "DELETE",
        "INSERT",  # storage_notify
        "DELETE",
    ], statements
