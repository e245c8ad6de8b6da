"""Change notification across connections and processes (conformance).

A subscriber works as a store will: look, wait for a wake, look again. Each
round writes only after the watcher looked and is waiting; a subscription may
wake once without a change by contract (its first look, a reconnect), so
there are three rounds: without delivery a later round would hang (to the
generous bound, then fail).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bridge.storage.errors import StorageError
from tests.storage.conftest import OpenDb

BOUND_S = 120.0  # only stops a hang
ROUNDS = 3


async def _marks(db: Any) -> int:
    return int(await db.fetch_value("SELECT count(*) FROM mark"))


async def _watch(db: Any, sub: Any, looked: asyncio.Queue[int]) -> None:
    """Look, say what was seen, wait for a wake; until every round's mark is seen."""
    while (seen := await _marks(db)) < ROUNDS:
        await looked.put(seen)
        await sub.wait()


async def _rounds(db: Any, topic: str, write: Callable[[int], Awaitable[None]]) -> None:
    """Each round writes mark n only once the watcher saw n - 1 and waits for a wake."""
    await db.execute("CREATE TABLE mark (n BIGINT)")
    looked: asyncio.Queue[int] = asyncio.Queue()
    async with db.subscribe(topic) as sub:
        watcher = asyncio.ensure_future(_watch(db, sub, looked))
        try:
            for n in range(1, ROUNDS + 1):
                while await asyncio.wait_for(looked.get(), BOUND_S) != n - 1:
                    pass
                await write(n)
            await asyncio.wait_for(watcher, BOUND_S)
        finally:
            watcher.cancel()


async def test_a_notify_on_one_connection_wakes_a_subscriber_on_another(
    open_db: OpenDb,
) -> None:
    one, two = await open_db(), await open_db()

    async def write(n: int) -> None:
        await two.execute("INSERT INTO mark VALUES (?)", (n,))
        await two.notify("jobs")

    await _rounds(one, "jobs", write)


async def test_a_notify_in_a_block_arrives_with_its_commit(open_db: OpenDb) -> None:
    one, two = await open_db(), await open_db()

    async def write(n: int) -> None:
        async with two.transaction():
            await two.notify("outbox")  # before the write: still delivered after commit
            await two.execute("INSERT INTO mark VALUES (?)", (n,))

    await _rounds(one, "outbox", write)


@pytest.mark.parametrize("topic", ["", "Jobs", "a-b", "x" * 49, "a;NOTIFY b"])
async def test_a_bad_topic_is_refused(db: Any, topic: str) -> None:
    with pytest.raises(StorageError, match="topic"):
        await db.notify(topic)
    with pytest.raises(StorageError, match="topic"):
        db.subscribe(topic)


_NOTIFIER = """
import asyncio, sys
from pathlib import Path
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.sqlite import SqliteDatabase

async def main(backend, location, n):
    if backend == "sqlite":
        db = await SqliteDatabase.open(Path(location))
    else:
        db = await PostgresDatabase.open(location)
    await db.execute("INSERT INTO mark VALUES (?)", (n,))
    await db.notify("turns")
    await db.aclose()

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


async def test_a_notify_from_another_process_wakes_this_one(
    open_db: OpenDb, backend: str, location: str
) -> None:
    async def write(n: int) -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _NOTIFIER, backend, location, str(n),
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), BOUND_S)
        assert proc.returncode == 0, err.decode()

    await _rounds(await open_db(), "turns", write)
