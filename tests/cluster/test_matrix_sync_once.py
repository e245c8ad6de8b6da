"""Instances sharing one Matrix account on PostgreSQL: only one of them syncs.

Each channel is made as `roost serve` makes it with instances
(`make_matrix(..., cluster=...)`), against a homeserver that answers `/sync`
and records who asked with which token. Exactly one instance syncs; the
other says it waits in standby. When the holder stops, the other takes over
at once and resumes from the token the first one stored; when the holder
dies without a word, the other takes over once its lease ran out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from bridge.channels.common.shared import Cluster
from bridge.channels.matrix.api import MatrixClient
from bridge.channels.matrix.channel import MatrixChannel
from bridge.channels.matrix.make import make_matrix
from bridge.core.config_sections import MatrixSettings
from bridge.storage.leases import Leases
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.types.messages import Final, Inbound
from tests.waits import until

BOT = "@roost:example.org"
TTL_MS = 600  # a dead holder's lease is free after this
STANDBY = "standby: another instance syncs"


@dataclass
class Homeserver:
    """Answers every `/sync` at once with the next token, and remembers who asked."""

    calls: list[tuple[str, str | None]] = field(default_factory=list)
    count: int = 0

    def client(self, name: str) -> MatrixClient:
        server = self

        class Client(MatrixClient):
            async def sync(self, since: str | None, timeout_ms: int, filter_json: str) -> Any:
                server.calls.append((name, since))
                server.count += 1
                await asyncio.sleep(0.01)  # a long poll that someone spoke into
                return {"next_batch": f"t{server.count}"}

        return Client("http://127.0.0.1:9", "token")

    def who(self) -> set[str]:
        return {name for name, _ in self.calls}


async def nobody(inbound: Inbound, reply: Any) -> Final:
    raise AssertionError("no message is sent in this test")


@pytest.fixture
async def db(pg_url: str) -> AsyncIterator[Database]:
    database = await PostgresDatabase.open(pg_url)
    await database.migrate(MIGRATIONS)
    yield database
    await database.aclose()


def instance(db: Database, server: Homeserver, name: str) -> MatrixChannel:
    settings = MatrixSettings(homeserver="http://127.0.0.1:9", user_id=BOT, access_token="token")
    made = make_matrix(
        settings,
        nobody,
        db,
        client=server.client(name),
        cluster=Cluster(Leases(db), TTL_MS),
        owner=f"{name}:0",
    )
    return made.channel


async def test_one_instance_syncs_and_the_other_resumes_from_its_token(db: Database) -> None:
    server = Homeserver()
    a, b = instance(db, server, "a"), instance(db, server, "b")
    await a.start()
    await until(lambda: a.batches >= 3, "a syncs")
    await b.start()
    calls = len(server.calls)
    await until(lambda: len(server.calls) >= calls + 5, "more syncs")
    assert server.who() == {"a"}, "only the lease's holder syncs"
    assert STANDBY in b.status_line() and STANDBY not in a.status_line()

    await a.stop()  # a clean stop hands the lease over at once
    stored = await a.store.next_batch()
    await until(lambda: b.batches >= 1, "b took over")
    first_of_b = next(since for name, since in server.calls if name == "b")
    assert first_of_b == stored, "b resumes from the token a stored"
    assert STANDBY not in b.status_line()
    await b.stop()


async def test_a_holder_that_died_is_taken_over_after_its_lease(db: Database) -> None:
    server = Homeserver()
    a, b = instance(db, server, "a"), instance(db, server, "b")
    await a.start()
    await until(lambda: a.batches >= 1, "a syncs")
    await b.start()
    assert a._loop is not None
    a._loop.cancel()  # a dies: no release, its lease runs out by itself
    await asyncio.gather(a._loop, return_exceptions=True)
    await until(lambda: b.batches >= 1, "b took over after the lease ran out")
    assert server.who() == {"a", "b"}
    await b.stop()
    await a.client.aclose()
