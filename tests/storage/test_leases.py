"""Leases with expiry and the instance name (conformance; the clock is injected)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bridge.storage.errors import LeaseHeld
from bridge.storage.leases import Leases, Singleton, claim_instance
from tests.storage.conftest import OpenDb
from tests.waits import HANG_S


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


async def test_held_refused_renewed_expired_taken_over_released(db: Any) -> None:
    clock = Clock()
    leases = Leases(db, clock)
    got = await leases.acquire("sweep", "a", 1000)
    assert got is not None and got.expires_ms == clock.ms + 1000
    assert await leases.acquire("sweep", "b", 1000) is None
    clock.ms += 500
    assert (await leases.acquire("sweep", "a", 1000)) is not None  # renewal
    clock.ms += 999
    assert await leases.acquire("sweep", "b", 1000) is None  # renewed: still a's
    holder = await leases.holder("sweep")
    assert holder is not None and holder.owner == "a"
    clock.ms += 1
    assert await leases.holder("sweep") is None  # expired
    assert (await leases.acquire("sweep", "b", 1000)) is not None  # takeover
    assert not await leases.release("sweep", "a")
    assert await leases.release("sweep", "b")
    assert (await leases.acquire("sweep", "a", 1000)) is not None


async def test_of_many_acquiring_at_once_on_two_connections_one_wins(open_db: OpenDb) -> None:
    clock = Clock()
    one, two = Leases(await open_db(), clock), Leases(await open_db(), clock)
    got = await asyncio.gather(
        *((one if n % 2 else two).acquire("outbox", f"owner{n}", 60_000) for n in range(12))
    )
    winners = [g.owner for g in got if g is not None]
    assert len(winners) == 1
    holder = await one.holder("outbox")
    assert holder is not None and holder.owner == winners[0]


async def test_the_same_instance_name_twice_is_refused_until_it_expires(db: Any) -> None:
    clock = Clock()
    leases = Leases(db, clock)
    await claim_instance(leases, "eu-1", "process-a", 30_000)
    with pytest.raises(LeaseHeld, match=r"cluster\.instance 'eu-1'"):
        await claim_instance(leases, "eu-1", "process-b", 30_000)
    await claim_instance(leases, "eu-2", "process-b", 30_000)  # another name is free
    await claim_instance(leases, "eu-1", "process-a", 30_000)  # its own renewal
    clock.ms += 30_000
    await claim_instance(leases, "eu-1", "process-b", 30_000)  # a's ran out


async def test_renew_extends_only_a_live_lease_of_its_owner(db: Any) -> None:
    clock = Clock()
    leases = Leases(db, clock)
    assert await leases.renew("chat:1", "a", 1000) is None  # free: renew never takes it
    assert await leases.acquire("chat:1", "a", 1000) is not None
    assert await leases.renew("chat:1", "b", 1000) is None  # not b's
    clock.ms += 999
    renewed = await leases.renew("chat:1", "a", 1000)
    assert renewed is not None and renewed.expires_ms == clock.ms + 1000
    clock.ms += 1000
    assert await leases.renew("chat:1", "a", 1000) is None  # ran out: a fence, not a retake
    assert await leases.acquire("chat:1", "b", 1000) is not None


async def test_release_all_lets_go_only_the_owners_leases_of_a_kind(db: Any) -> None:
    leases = Leases(db, Clock())
    for name, owner in (("chat:1", "a"), ("chat:2", "a"), ("chat:3", "b"), ("instance:a", "a")):
        assert await leases.acquire(name, owner, 1000) is not None
    assert await leases.release_all("a", "chat:") == 2
    assert await leases.holder("chat:1") is None and await leases.holder("chat:2") is None
    assert (
        await leases.holder("chat:3") is not None and await leases.holder("instance:a") is not None
    )


async def test_a_singleton_runs_on_one_holder_and_moves_at_a_release(db: Any) -> None:
    leases = Leases(db)
    running: list[str] = []
    stops = {"a": asyncio.Event(), "b": asyncio.Event()}

    def work(who: str) -> Any:
        async def run() -> None:
            running.append(who)
            await stops[who].wait()
            running.remove(who)

        return run

    a, b = Singleton(leases, "schedule", "a", 300), Singleton(leases, "schedule", "b", 300)
    first = asyncio.create_task(a.run(work("a")))
    await until(lambda: running == ["a"])
    second = asyncio.create_task(b.run(work("b")))
    holder = await leases.holder("schedule")
    assert holder is not None and holder.owner == "a" and not b.held
    stops["a"].set()  # a stops: its work ends, then the lease goes
    await first
    await a.release()
    await until(lambda: running == ["b"])
    stops["b"].set()
    await second
    await b.release()
    assert await leases.holder("schedule") is None


async def test_a_singleton_that_lost_its_lease_cancels_its_work(db: Any) -> None:
    leases = Leases(db)
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def work() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    one = Singleton(leases, "schedule", "a", 300)
    task = asyncio.create_task(one.run(work))
    await asyncio.wait_for(started.wait(), HANG_S)
    await leases.release("schedule", "a")  # taken while "a" was away
    assert await leases.acquire("schedule", "x", 60_000) is not None
    await asyncio.wait_for(cancelled.wait(), HANG_S)
    assert not one.held and not task.done()  # waiting for the lease again
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def until(check: Any) -> None:
    async with asyncio.timeout(HANG_S):
        while not check():
            await asyncio.sleep(0.01)
