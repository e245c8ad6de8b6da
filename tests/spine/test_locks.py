"""The one keyed-lock type: FIFO per key, keys forgotten when free, keys independent."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bridge.core.locks import KeyedLocks, TenantLocks
from tests.waits import HANG_S


async def test_waiters_of_one_key_get_the_lock_in_arrival_order() -> None:
    locks: KeyedLocks[str] = KeyedLocks()
    order: list[int] = []
    gate = asyncio.Event()

    async def worker(n: int) -> None:
        async with locks.hold("chat"):
            if n == 0:
                await gate.wait()  # everyone else queues up behind the first
            order.append(n)

    tasks = [asyncio.create_task(worker(n)) for n in range(20)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(locks) == 1
    gate.set()
    await asyncio.gather(*tasks)
    assert order == list(range(20))
    assert len(locks) == 0


async def test_keys_are_forgotten_once_nobody_holds_or_waits_even_after_cancel() -> None:
    locks: KeyedLocks[str] = KeyedLocks()
    for n in range(1000):
        async with locks.hold(f"chat-{n}"):
            assert len(locks) == 1
    assert len(locks) == 0
    held = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with locks.hold("k"):
            held.set()
            await release.wait()

    async def waiter() -> None:
        async with locks.hold("k"):
            raise AssertionError("a cancelled waiter never gets the lock")

    first = asyncio.create_task(holder())
    await held.wait()
    second = asyncio.create_task(waiter())
    await asyncio.sleep(0)
    second.cancel()
    await asyncio.gather(second, return_exceptions=True)
    assert len(locks) == 1, "the holder still holds it"
    release.set()
    await first
    assert len(locks) == 0


async def test_different_keys_do_not_wait_on_each_other() -> None:
    locks: KeyedLocks[str] = KeyedLocks()
    # a deadlock here (b waiting for a) would hang; the timeout turns that into a failure
    async with locks.hold("a"), asyncio.timeout(HANG_S), locks.hold("b"):
        assert len(locks) == 2


async def test_tenant_locks_keep_their_api_and_forget_tenants(tmp_path: Path) -> None:
    locks = TenantLocks()
    for n in range(500):
        root = tmp_path / f"t{n}"
        async with locks.hold(root, "memory"), locks.hold(root, "profile"):
            assert len(locks) == 2
    assert len(locks) == 0, "the old TenantLocks kept one lock per tenant forever"


async def test_an_error_inside_releases_the_lock_and_forgets_the_key() -> None:
    locks: KeyedLocks[str] = KeyedLocks()
    for _ in range(3):  # each time the lock is free again: no hang
        try:
            async with asyncio.timeout(HANG_S), locks.hold("k"):
                raise ValueError("inside")
        except ValueError:
            pass
        assert len(locks) == 0
    async with locks.hold("k"):
        assert locks.users("k") == 1
