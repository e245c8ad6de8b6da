"""`GET /readyz`, a load balancer's check: 200 while the instance can serve, 503 with a
short fixed reason while its database cannot answer (a real PostgreSQL server stopped and
started again); `/healthz` (the server runs) answers 200 throughout. No token needed, so
the reason names no host, port or error text."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from bridge.app.build import build
from bridge.app.channels_up import web_channel
from bridge.app.readiness import database_ready
from bridge.core.config import Settings
from bridge.storage.postgres.database import PostgresDatabase
from tests.conftest import ScriptedBackend
from tests.storage.pg_server import NoPostgres, PgServer, start_server
from tests.waits import HANG_S


@pytest.fixture(scope="module")
def server() -> Iterator[PgServer]:
    try:
        pg = start_server()
    except NoPostgres as exc:
        pytest.skip(f"PostgreSQL not installed ({exc})")
    yield pg
    pg.remove()


async def get(http: aiohttp.ClientSession, path: str) -> tuple[int, dict[str, object]]:
    async with http.get(path) as r:
        return r.status, await r.json()


@pytest.fixture
async def web(server: PgServer, home: Path) -> AsyncIterator[tuple[aiohttp.ClientSession, object]]:
    settings = Settings(home=home, database={"url": server.url()}, web={"port": 0})
    roost = await build(settings, backend=ScriptedBackend())
    launched = web_channel(settings, roost, {})
    await launched.channel.start()
    assert launched.port is not None
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{launched.port()}") as http:
            yield http, roost.database
    finally:
        await launched.channel.stop()
        await roost.aclose()


async def test_readyz_follows_the_database_and_healthz_does_not(
    web: tuple[aiohttp.ClientSession, object], server: PgServer
) -> None:
    http, db = web
    assert isinstance(db, PostgresDatabase)
    assert await get(http, "/readyz") == (200, {"ok": True})
    await asyncio.to_thread(server.stop, "fast")
    try:
        assert await get(http, "/readyz") == (503, {"ok": False, "reason": "database unreachable"})
        assert await get(http, "/healthz") == (200, {"ok": True})
    finally:
        await asyncio.to_thread(server.start)
    await asyncio.wait_for(db.health.up.wait(), HANG_S)
    assert await get(http, "/readyz") == (200, {"ok": True})


class Silent:
    """A database whose statement never comes back."""

    async def fetch_value(self, sql: str, args: object = ()) -> object:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_a_database_that_does_not_answer_is_not_ready() -> None:
    assert await database_ready(Silent(), timeout_s=0.01) == "database not answering"  # type: ignore[arg-type]
