"""An instance that waits for the `schedule` lease stops at once.

With instances sharing a database only the lease's holder schedules; the
others wait for the lease. Stopping one of those has no tick to let finish,
so it must not wait out the stop grace (10 s at every `systemctl stop`
before). The grace here is far longer than the bound `HANG_S`: a stop that
waited for it fails the test, however fast the machine.
"""

from __future__ import annotations

import asyncio

from bridge.app.build import Roost
from bridge.app.schedule_loop import ScheduleLoop
from bridge.storage.leases import Leases, Singleton
from tests.waits import HANG_S, until


async def test_an_instance_waiting_for_the_lease_stops_without_the_grace(roost: Roost) -> None:
    leases = Leases(roost.database)
    assert await leases.acquire("schedule", "other-instance", 3_600_000) is not None
    lead = Singleton(leases, "schedule", "this-instance", 3_600_000)
    loop = ScheduleLoop(roost, lead=lead, stop_grace_s=100 * HANG_S)
    loop.start()
    await until(lambda: loop._tasks and not loop._tasks[0].done(), "the loop waits")
    await asyncio.wait_for(loop.stop(), HANG_S)
    assert not lead.held


async def test_the_holder_lets_its_tick_finish_within_the_grace(roost: Roost) -> None:
    leases = Leases(roost.database)
    lead = Singleton(leases, "schedule", "this-instance", 3_600_000)
    loop = ScheduleLoop(roost, lead=lead)
    loop.start()
    await until(lambda: lead.held, "the lease is held")
    await asyncio.wait_for(loop.stop(), HANG_S)
    assert await leases.acquire("schedule", "next-instance", 3_600_000) is not None
