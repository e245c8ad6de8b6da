"""A lease held around work where its request arrived (the web page's turns), on both backends.

`LeaseHold` (bridge/core/lease_hold.py) and the web's wrapper
(bridge/channels/web/leased.py) with two instances on two connections: the
second waits while the first holds the chat, then runs (in that order);
bounded, it gives up with the busy reply and runs nothing; an expired
holder's (a dead instance's) lease is taken at once; two turns of one chat
in one process take the lease one after the other and let it go.
"""

from __future__ import annotations

import asyncio

from bridge.channels.web.leased import BUSY, key_of, leased
from bridge.core.dispatch import lease_name
from bridge.core.lease_hold import LeaseHold
from bridge.storage.leases import Leases
from bridge.storage.protocol import Database
from bridge.types.messages import DeltaSink, Final, Inbound
from bridge.types.progress import ProgressSink
from tests.storage.conftest import OpenDb
from tests.waits import HANG_S

TTL_MS = 60_000


def inbound(text: str, chat: str = "c1") -> Inbound:
    return Inbound("web", "web:alice", chat, text, text)


class Turns:
    """A web `handle` whose turns end when the test says so."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.go: dict[str, asyncio.Event] = {}

    async def handle(
        self, msg: Inbound, on_delta: DeltaSink | None, on_progress: ProgressSink | None
    ) -> Final:
        self.started.append(msg.text)
        await self.go.setdefault(msg.text, asyncio.Event()).wait()
        return Final(f"echo: {msg.text}")

    def end(self, text: str) -> None:
        self.go.setdefault(text, asyncio.Event()).set()


def instance(db: Database, owner: str) -> LeaseHold:
    return LeaseHold(Leases(db), owner, TTL_MS, lease_name, poll_s=0.01)


async def until(check: object) -> None:
    async with asyncio.timeout(HANG_S):
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.01)


async def holder(db: Database) -> str | None:
    lease = await Leases(db).holder(lease_name(key_of(inbound(""))))
    return None if lease is None else lease.owner


async def test_a_second_instance_waits_for_the_chat_then_answers(open_db: OpenDb) -> None:
    one, two = await open_db(), await open_db()
    turns = Turns()
    a, b = instance(one, "a"), instance(two, "b")
    first = asyncio.create_task(leased(turns.handle, a)(inbound("q1"), None, None))
    await until(lambda: turns.started == ["q1"])
    second = asyncio.create_task(leased(turns.handle, b)(inbound("q2"), None, None))
    await until(lambda: b.waited == 1)
    assert turns.started == ["q1"] and await holder(one) == "a"  # q2 did not begin
    turns.end("q1")
    assert await first == Final("echo: q1")
    await until(lambda: turns.started == ["q1", "q2"])
    assert await holder(one) == "b"
    turns.end("q2")
    assert await second == Final("echo: q2")
    assert await holder(one) is None  # let go after the turn


async def test_waiting_is_bounded_and_then_nothing_runs(open_db: OpenDb) -> None:
    one, two = await open_db(), await open_db()
    turns = Turns()
    a, b = instance(one, "a"), instance(two, "b")
    first = asyncio.create_task(leased(turns.handle, a)(inbound("q1"), None, None))
    await until(lambda: turns.started == ["q1"])
    busy = await leased(turns.handle, b, wait_s=0.0)(inbound("q2"), None, None)
    assert busy == Final(BUSY, kind="error") and b.refused == 1
    other_chat = asyncio.create_task(
        leased(turns.handle, b, wait_s=0.0)(inbound("x", chat="c2"), None, None)
    )
    await until(lambda: "x" in turns.started)  # another chat of the person: not held up
    turns.end("x")
    turns.end("q1")
    assert await first == Final("echo: q1") and await other_chat == Final("echo: x")
    assert turns.started == ["q1", "x"]


async def test_a_dead_instances_lease_is_taken_once_it_expired(db: Database) -> None:
    name = lease_name(key_of(inbound("")))
    assert await Leases(db).acquire(name, "dead", -1) is not None  # expired already
    turns = Turns()
    turns.end("q1")
    got = await leased(turns.handle, instance(db, "b"), wait_s=0.0)(inbound("q1"), None, None)
    assert got == Final("echo: q1")


async def test_one_processs_turns_of_a_chat_take_the_lease_in_turn(db: Database) -> None:
    turns = Turns()
    hold = instance(db, "a")
    run = leased(turns.handle, hold, wait_s=0.0)  # its own turns never see each other's lease
    first = asyncio.create_task(run(inbound("q1"), None, None))
    await until(lambda: turns.started == ["q1"])
    second = asyncio.create_task(run(inbound("q2"), None, None))
    await asyncio.sleep(0)
    turns.end("q1")
    assert await first == Final("echo: q1")
    await until(lambda: turns.started == ["q1", "q2"])
    assert await holder(db) == "a"
    turns.end("q2")
    assert await second == Final("echo: q2")
    assert await holder(db) is None and hold.waited == 0
