"""Two real `roost serve` instances on one home and one PostgreSQL answer one web chat at once.

Issue 25, the web page: `POST /api/chat` runs its turn where the request
arrived, under the chat's lease (bridge/channels/web/leased.py; the waits
and the bound are tests/storage/test_lease_hold.py). Here the wiring:
questions of one web chat posted to both instances at once are all
answered (none refused as busy: the other instance's turns are short) and
the chat's lease is held by nobody afterwards; a question of a chat whose
lease another instance holds waits (the model is not asked) until that
lease is let go, then is answered.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from tests.cluster.kit import Cluster, ClusterOf
from tests.fakes.fake_openai import FakeOpenAI
from tests.waits import until


@pytest.fixture
def cluster(cluster_of: ClusterOf) -> Cluster:
    return cluster_of()


async def test_one_web_chat_on_two_instances_is_answered_turn_by_turn(
    cluster: Cluster, model: FakeOpenAI, pg_url: str
) -> None:
    live = list(await asyncio.gather(*(cluster.launch(f"v{n}") for n in range(2))))
    replies = await asyncio.gather(
        *(cluster.chat(live[n % 2], "shared", f"q{n}") for n in range(16))
    )
    assert replies == [f"echo: q{n}" for n in range(16)]
    conn = await asyncpg.connect(pg_url)
    try:
        leases = await conn.fetchval("SELECT COUNT(*) FROM storage_leases WHERE name LIKE 'chat:%'")
    finally:
        await conn.close()
    assert leases == 0

    held = "chat:web:local:held"  # another instance's turn of this chat runs
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(
            "INSERT INTO storage_leases (name, owner, expires_ms) VALUES ($1, 'elsewhere',"
            " CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) + 600000)",
            held,
        )
        waiting = asyncio.create_task(cluster.chat(live[0], "held", "q-held"))
        await until(lambda: held in live[0].stderr(), "the turn waiting for the lease")
        assert not waiting.done()
        assert all("q-held" not in str(r) for r in model.requests)  # it did not begin
        await conn.execute("DELETE FROM storage_leases WHERE name = $1", held)  # that turn ended
        assert await waiting == "echo: q-held"
    finally:
        await conn.close()
    for inst in live:
        assert await cluster.stop(inst) == 0, inst.stderr()[-3000:]
