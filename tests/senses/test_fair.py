"""Fair shares of the decoder slots: one tenant can never take them all, a freed slot
goes round-robin by tenant, a full queue is refused at once, a cancelled waiter
leaves no trace. Pure asyncio: holders are tasks blocked on events."""

from __future__ import annotations

import asyncio

import pytest

from bridge.senses.fair import Busy, FairSlots


class Holder:
    """A task that holds a slot for `tenant` until released."""

    def __init__(self, slots: FairSlots, tenant: str, log: list[str]) -> None:
        self.tenant = tenant
        self.release = asyncio.Event()
        self.task = asyncio.ensure_future(self._run(slots, log))

    async def _run(self, slots: FairSlots, log: list[str]) -> None:
        async with slots.hold(self.tenant):
            log.append(self.tenant)
            await self.release.wait()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_one_tenant_never_takes_every_slot() -> None:
    slots, log = FairSlots(2, per_tenant=1, max_waiting=16), list[str]()
    bombs = [Holder(slots, "mallory", log) for _ in range(6)]
    await settle()
    assert log == ["mallory"] and slots.busy == 1
    alice = Holder(slots, "alice", log)
    await settle()
    assert log == ["mallory", "alice"]  # straight in, past five waiting bombs
    alice.release.set()
    bombs[0].release.set()
    await settle()
    assert log == ["mallory", "alice", "mallory"] and slots.waiting("mallory") == 4
    for bomb in bombs:
        bomb.release.set()
    await asyncio.gather(*(b.task for b in bombs))
    assert slots.busy == 0 and log.count("mallory") == 6


async def test_freed_slots_go_round_robin_by_tenant() -> None:
    slots, log = FairSlots(1, per_tenant=1, max_waiting=16), list[str]()
    first = Holder(slots, "a", log)
    waiting = [Holder(slots, t, log) for t in ("a", "a", "a", "b", "c", "b")]
    await settle()
    first.release.set()
    for holder in waiting:
        holder.release.set()
    await asyncio.gather(first.task, *(h.task for h in waiting))
    assert log == ["a", "a", "b", "c", "a", "b", "a"]


async def test_a_full_queue_is_refused_at_once() -> None:
    slots, log = FairSlots(2, per_tenant=1, max_waiting=2), list[str]()
    holders = [Holder(slots, "a", log) for _ in range(3)]  # one runs, two wait
    await settle()
    with pytest.raises(Busy):
        async with slots.hold("a"):
            pass
    other = Holder(slots, "b", log)  # another tenant is not affected
    await settle()
    assert log == ["a", "b"]
    for holder in (*holders, other):
        holder.release.set()
    await asyncio.gather(*(h.task for h in (*holders, other)))


async def test_a_cancelled_waiter_leaves_no_trace() -> None:
    slots, log = FairSlots(1, per_tenant=1, max_waiting=16), list[str]()
    first = Holder(slots, "a", log)
    gone = Holder(slots, "b", log)
    after = Holder(slots, "c", log)
    await settle()
    gone.task.cancel()
    await settle()
    assert slots.waiting("b") == 0
    first.release.set()
    after.release.set()
    await asyncio.gather(first.task, after.task)
    assert log == ["a", "c"] and slots.busy == 0
