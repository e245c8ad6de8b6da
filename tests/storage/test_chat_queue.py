"""Instances sharing one bot: each chat's stored updates, per chat under a lease, on both backends.

`ChatQueue` (bridge/channels/common/chat_queue.py): updates stored `new`
by any instance, the chats with open updates whose lease nobody holds
(oldest first), a chat's updates taken oldest first with their tries
counted, a row another transaction holds skipped on PostgreSQL, an update
whose answer is already in the outbox marked done. `SharedWork`
(bridge/channels/common/shared.py, Telegram's) with two instances on two connections:
every update answered once, in each chat's order; a dead instance's chat
taken once its lease expired; a poison update given up after its tries;
a stop releases the leases only after the turn under way ended.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import pytest

from bridge.channels.common.chat_queue import ChatQueue, Taken, lease_name
from bridge.channels.telegram.inbox import UpdateInbox
from bridge.channels.telegram.shared import MAX_TRIES, SharedWork
from bridge.schedule.outbox import OutboxStore
from bridge.storage.leases import Leases
from bridge.storage.protocol import Database
from tests.masking import m
from tests.storage.conftest import OpenDb
from tests.storage.test_inbox_store import message
from tests.waits import HANG_S

SOURCE = "telegram:42"


async def state_of(db: Database, update_id: int) -> tuple[str, int]:
    row = await db.fetch_one(
        "SELECT state, tries FROM channel_inbox WHERE source = ? AND update_id = ?",
        (SOURCE, update_id),
    )
    assert row is not None
    return str(row[0]), int(row[1])


async def test_open_chats_oldest_first_and_not_while_leased(db: Database) -> None:
    inbox = UpdateInbox(db, SOURCE, "a")
    stored = await inbox.store(
        [message(3, 222, "b1"), message(1, 111, "a1"), message(2, 111, "a2")], taken=False
    )
    assert stored == 3 and inbox.take(1) is False  # not taken by whoever stored it
    assert await inbox.store([message(1, 111, "a1")], taken=False) == 0  # a redelivery
    assert await state_of(db, 1) == ("new", 0)
    queue = ChatQueue(db, SOURCE)
    assert await queue.open_chats() == ["111", "222"]
    leases = Leases(db)
    assert await leases.acquire(lease_name(SOURCE, "111"), "a", 60_000) is not None
    assert await queue.open_chats() == ["222"]
    await leases.release(lease_name(SOURCE, "111"), "a")
    assert await leases.acquire(lease_name(SOURCE, "111"), "dead", -1) is not None  # expired
    assert await queue.open_chats() == ["111", "222"]


async def test_a_chat_is_taken_oldest_first_with_its_tries(db: Database) -> None:
    inbox = UpdateInbox(db, SOURCE, "a")
    await inbox.store([message(n, 111, f"q{n}") for n in (5, 2, 9)], taken=False)
    queue = ChatQueue(db, SOURCE)
    first = await queue.claim("111", "a")
    assert first is not None and (first.update_id, first.tries, first.msg) == (2, 1, "502")
    assert first.payload["message"]["text"] == "q2"
    again = await queue.claim("111", "b")  # not done: the next holder takes it again
    assert again is not None and (again.update_id, again.tries) == (2, 2)
    await inbox.done(2)
    nxt = await queue.claim("111", "b")
    assert nxt is not None and nxt.update_id == 5
    await inbox.done(5)
    await inbox.done(9, dropped=True)
    assert await queue.claim("111", "b") is None
    assert not await queue.has_open("111") and await queue.open_chats() == []


async def test_an_update_already_answered_in_the_outbox_is_marked_done(db: Database) -> None:
    inbox = UpdateInbox(db, SOURCE, "a")
    await inbox.store([message(1, 111, "q1"), message(2, 111, "q2")], taken=False)
    await OutboxStore(db).enqueue("alice", "telegram", "111", m("a1"), "reply:501", now_ms=1)
    queue = ChatQueue(db, SOURCE)
    one, two = await queue.claim("111", "a"), None
    assert one is not None and await queue.answered(one)
    assert await state_of(db, 1) == ("done", 1)
    two = await queue.claim("111", "a")
    assert two is not None and not await queue.answered(two)


async def test_a_row_another_transaction_holds_is_skipped_on_postgresql(
    backend: str, open_db: OpenDb
) -> None:
    if backend != "postgresql":
        pytest.skip("SQLite has one writer: nothing is held by another transaction")
    one, two = await open_db(), await open_db()
    await UpdateInbox(one, SOURCE, "a").store(
        [message(1, 111, "q1"), message(2, 111, "q2")], taken=False
    )
    held, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with two.transaction():
            await two.fetch_all(
                "SELECT update_id FROM channel_inbox WHERE update_id = 1 FOR UPDATE"
            )
            held.set()
            await release.wait()

    holder = asyncio.create_task(hold())
    await asyncio.wait_for(held.wait(), HANG_S)
    got = await ChatQueue(one, SOURCE).claim("111", "a")
    assert got is not None and got.update_id == 2  # no wait on the held row, never it twice
    release.set()
    await holder


class Recorder:
    """The answers of all instances: (owner, update id), per chat, in order."""

    def __init__(self) -> None:
        self.by_chat: dict[str, list[int]] = defaultdict(list)
        self.by: list[tuple[str, int]] = []
        self.gate: asyncio.Event | None = None
        self.started = asyncio.Event()

    def answer_for(self, owner: str, inbox: UpdateInbox) -> Any:
        async def answer(taken: Taken) -> None:
            self.started.set()
            if self.gate is not None:
                await self.gate.wait()
            self.by_chat[taken.chat].append(taken.update_id)
            self.by.append((owner, taken.update_id))
            await inbox.done(taken.update_id)

        return answer


async def instance(db: Database, owner: str, rec: Recorder, ttl_ms: int = 60_000) -> SharedWork:
    inbox = UpdateInbox(db, SOURCE, owner)
    given_up: list[int] = []

    async def give_up(taken: Taken) -> None:
        given_up.append(taken.update_id)

    work = SharedWork(inbox, Leases(db), ttl_ms, rec.answer_for(owner, inbox), give_up)
    work.given_up = given_up  # type: ignore[attr-defined]
    work.start()
    return work


async def until(check: Any) -> None:
    async with asyncio.timeout(HANG_S):
        while not await check():
            await asyncio.sleep(0.02)


async def test_two_instances_answer_every_update_once_in_each_chats_order(
    open_db: OpenDb,
) -> None:
    one, two = await open_db(), await open_db()
    rec = Recorder()
    a, b = await instance(one, "a", rec), await instance(two, "b", rec)
    asked: dict[str, list[int]] = defaultdict(list)
    for n in range(1, 61):  # round-robin over the two instances, six chats
        chat = 100 + n % 6
        await (a if n % 2 else b).received([message(n, chat, f"q{n}")])
        asked[str(chat)].append(n)
    await until(lambda: _done(rec, 60))
    assert dict(rec.by_chat) == dict(asked)
    assert sorted(uid for _, uid in rec.by) == list(range(1, 61))
    await a.stop(HANG_S)
    await b.stop(HANG_S)
    assert await one.fetch_value("SELECT COUNT(*) FROM storage_leases") == 0


async def _done(rec: Recorder, count: int) -> bool:
    return len(rec.by) >= count


async def test_a_dead_instances_chat_is_taken_once_its_lease_expired(db: Database) -> None:
    dead = UpdateInbox(db, SOURCE, "dead")
    await dead.store([message(1, 111, "q1"), message(2, 111, "q2")], taken=False)
    leases = Leases(db)
    name = lease_name(SOURCE, "111")
    assert await leases.acquire(name, "dead", 400) is not None
    assert await ChatQueue(db, SOURCE).claim("111", "dead") is not None  # then killed
    rec = Recorder()
    alive = await instance(db, "alive", rec, ttl_ms=400)
    await until(lambda: _done(rec, 2))
    assert rec.by == [("alive", 1), ("alive", 2)]
    assert await state_of(db, 1) == ("done", 2)  # taken twice: by the dead one, then here
    await alive.stop(HANG_S)


async def test_a_poison_update_is_given_up_after_its_tries(db: Database) -> None:
    inbox = UpdateInbox(db, SOURCE, "x")
    await inbox.store([message(1, 111, "boom"), message(2, 111, "fine")], taken=False)
    await db.execute("UPDATE channel_inbox SET tries = ? WHERE update_id = 1", (MAX_TRIES,))
    rec = Recorder()
    work = await instance(db, "a", rec)
    await until(lambda: _done(rec, 1))
    assert rec.by == [("a", 2)] and work.given_up == [1]  # type: ignore[attr-defined]
    assert await state_of(db, 1) == ("dropped", MAX_TRIES + 1)
    await work.stop(HANG_S)


async def test_a_stop_releases_the_lease_only_after_the_turn_ended(db: Database) -> None:
    rec = Recorder()
    rec.gate = asyncio.Event()
    work = await instance(db, "a", rec)
    await work.received([message(1, 111, "q1")])
    await asyncio.wait_for(rec.started.wait(), HANG_S)
    leases = Leases(db)
    stopping = asyncio.create_task(work.stop(HANG_S))
    await asyncio.sleep(0)
    assert not stopping.done()
    assert await leases.holder(lease_name(SOURCE, "111")) is not None  # held while it runs
    rec.gate.set()
    await stopping
    assert rec.by == [("a", 1)]
    assert await leases.holder(lease_name(SOURCE, "111")) is None
