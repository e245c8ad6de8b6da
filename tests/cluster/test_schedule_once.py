"""Two real `roost serve` instances on one PostgreSQL: a reminder is delivered once, not twice.

A person sets `/remind in 3 seconds ...` through the webhook; every instance
runs a scheduler loop, but only the holder of the lease `schedule` runs jobs
and delivers the outbox (`storage.leases.Singleton`), so the job runs once
and the reminder reaches the person exactly once. (Without the lease both
instances ran it: `runs` 2, the outbox key keeping the second post out.)
"""

from __future__ import annotations

import asyncio

import asyncpg

from tests.cluster.kit import ClusterOf, private_message
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import until

PERSON = 333_333


async def job_state(url: str) -> list[tuple[str, str, int]]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT kind, state, runs FROM jobs")
    finally:
        await conn.close()
    return [(str(r["kind"]), str(r["state"]), int(r["runs"])) for r in rows]


async def queued(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT COUNT(*) FROM outbox WHERE state = 'queued'"))
    finally:
        await conn.close()


async def test_a_reminder_is_delivered_once_by_two_instances(
    cluster_of: ClusterOf, pg_url: str, bot_api: FakeBotAPI
) -> None:
    cluster = cluster_of(people=[PERSON])
    live = list(await asyncio.gather(cluster.launch("s0"), cluster.launch("s1")))
    update = private_message(1, PERSON, "/remind in 3 seconds water the plants", 700)
    assert await cluster.post_update(live[1], update) == 200

    def reminders() -> list[str]:  # the post itself: "⏰ " + text (not the confirmation)
        return [m.text for m in bot_api.sent_to(PERSON) if m.text == "⏰ water the plants"]

    async def delivered() -> bool:
        return bool(reminders()) and await queued(pg_url) == 0

    await until(delivered, "the reminder delivered")
    assert await job_state(pg_url) == [("reminder", "done", 1)]  # run once, by one
    assert len(reminders()) == 1, [m.text for m in bot_api.sent_to(PERSON)]
    for inst in live:
        assert await cluster.stop(inst) == 0
