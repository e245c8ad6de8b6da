"""The notification poller's looks: on the event loop's thread when its connection is idle.

An idle daemon with a subscriber (the outbox, the scheduler) looks at
`PRAGMA data_version` every `poll_s`. Each look handed to the poller's thread
cost two thread wake-ups (the job queued, the answer posted back to the loop);
a look run inline costs none. A notify from another connection is still seen.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite.database import SqliteDatabase

BOUND_S = 120.0  # only stops a hang


async def test_idle_looks_run_inline_and_still_see_another_connections_notify(
    tmp_path: Path,
) -> None:
    path = tmp_path / "roost.db"
    writer = await SqliteDatabase.open(path)
    await writer.migrate(MIGRATIONS)
    watcher = await SqliteDatabase.open(path, poll_s=0.01)
    try:
        async with watcher.subscribe("jobs") as sub:
            await asyncio.wait_for(sub.wait(), BOUND_S)  # the first look wakes everyone
            poller = watcher._poll_worker
            assert poller is not None

            inline, queued = poller.inlined, poller._queued

            async def looked(times: int) -> None:
                while poller.inlined + poller._queued < inline + queued + times:
                    await asyncio.sleep(0.01)

            await asyncio.wait_for(looked(5), BOUND_S)
            assert poller._queued == queued  # every look ran inline: no thread woken
            await writer.notify("jobs")
            await asyncio.wait_for(sub.wait(), BOUND_S)
    finally:
        await watcher.aclose()
        await writer.aclose()
