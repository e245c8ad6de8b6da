"""PostgreSQL only: an unreachable server, a slow query beside others, the server going away
(for the storage layer, and for a turn: a clear reply, then answered again)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from bridge.app.build import build
from bridge.core.config import Settings
from bridge.core.unreachable import DATABASE_DOWN
from bridge.storage.errors import DatabaseUnavailable, DatabaseUnreachable, StorageError
from bridge.storage.postgres import PostgresDatabase
from bridge.types.messages import Inbound
from tests.conftest import ScriptedBackend
from tests.storage.pg_server import PgServer, start_server

BOUND_S = 120.0  # only stops a hang


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nobody listens once the socket closes


async def test_unreachable_at_start_names_database_url_and_hides_the_password() -> None:
    url = f"postgresql://roost:hunter2secret@127.0.0.1:{_closed_port()}/roost"
    with pytest.raises(DatabaseUnreachable) as caught:
        await PostgresDatabase.open(url, connect_timeout_s=30)
    text = str(caught.value)
    assert "database.url" in text and "127.0.0.1" in text
    assert "hunter2secret" not in text


async def _wait_running(db: PostgresDatabase, marker: str) -> int:
    """The backend pid of the statement holding `marker` once it runs (polled, bounded)."""
    for _ in range(int(BOUND_S * 20)):
        pid = await db.fetch_value(
            "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE ?"
            " AND pid <> pg_backend_pid()",
            (f"%{marker}%",),
        )
        if pid is not None:
            return int(pid)
        await asyncio.sleep(0.05)
    raise AssertionError("the slow statement never started")


async def test_a_slow_statement_stalls_no_other_chat(pg_url: str) -> None:
    db = await PostgresDatabase.open(pg_url, pool_size=3)
    try:
        await db.execute("CREATE TABLE chat (n BIGINT)")
        slow = asyncio.ensure_future(db.execute("SELECT pg_sleep(3600) /* slow-one */"))
        pid = await _wait_running(db, "slow-one")
        for n in range(20):  # other chats' statements, each on the pool's other connections
            async with db.transaction():
                await db.execute("INSERT INTO chat VALUES (?)", (n,))
        assert await db.fetch_value("SELECT count(*) FROM chat") == 20
        assert not slow.done()  # all of that happened while the slow one still ran
        assert await db.fetch_value("SELECT pg_cancel_backend(?)", (pid,)) is True
        with pytest.raises(StorageError):
            await asyncio.wait_for(slow, BOUND_S)
        assert await db.fetch_value("SELECT 1") == 1
    finally:
        await db.aclose()


@pytest.fixture(scope="module")
def own_server() -> PgServer:
    from tests.storage.pg_server import NoPostgres

    try:
        server = start_server()
    except NoPostgres as exc:
        pytest.skip(f"PostgreSQL not installed ({exc})")
    yield server  # type: ignore[misc]
    server.remove()


async def test_the_server_going_away_fails_statements_clearly_then_reconnects(
    own_server: PgServer,
) -> None:
    db = await PostgresDatabase.open(own_server.url(), pool_size=2)
    try:
        await db.execute("CREATE TABLE t (n BIGINT)")
        await db.execute("INSERT INTO t VALUES (1)")
        await asyncio.to_thread(own_server.stop, "fast")  # (immediate: fsync is off)
        with pytest.raises(DatabaseUnavailable, match="database"):
            await db.execute("INSERT INTO t VALUES (2)")
        with pytest.raises(DatabaseUnavailable):  # while down: refused at once
            async with db.transaction():
                await db.execute("INSERT INTO t VALUES (3)")
        await asyncio.to_thread(own_server.start)
        await asyncio.wait_for(db.health.up.wait(), BOUND_S)
        assert db.health.reconnects >= 1
        await db.execute("INSERT INTO t VALUES (4)")
        assert await db.fetch_all("SELECT n FROM t ORDER BY n") == [(1,), (4,)]
    finally:
        await db.aclose()


async def test_a_turn_while_the_server_is_away_gets_a_clear_reply_and_the_next_is_answered(
    own_server: PgServer, home: Path
) -> None:
    settings = Settings(home=home, database={"url": own_server.url()})
    roost = await build(settings, backend=ScriptedBackend("first answer", "third answer"))
    db = roost.database
    assert isinstance(db, PostgresDatabase)
    try:
        said = await roost.core.handle(_web("hello", 1), None)
        assert said.text == "first answer"
        await asyncio.to_thread(own_server.stop, "fast")
        down = await roost.core.handle(_web("while it is away", 2), None)
        assert down.kind == "error" and down.text == DATABASE_DOWN
        await asyncio.to_thread(own_server.start)
        await asyncio.wait_for(db.health.up.wait(), BOUND_S)
        back = await roost.core.handle(_web("and now", 3), None)
        assert back.text == "third answer"
        rows = await db.fetch_all(
            "SELECT role, content FROM session_messages ORDER BY turn, role DESC"
        )
        assert [content for _, content in rows] == [  # the lost one left nothing behind
            "hello",
            "first answer",
            "and now",
            "third answer",
        ]
    finally:
        await roost.aclose()


def _web(text: str, n: int) -> Inbound:
    return Inbound("web", "local", "c1", text, str(n))
