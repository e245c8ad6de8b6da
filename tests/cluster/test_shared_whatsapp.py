"""Three real `roost serve` instances on one home and one PostgreSQL serve one WhatsApp number.

Issue 25 item 2 for WhatsApp. Meta's webhooks (signed, from the fake Cloud
API's payloads) are delivered round-robin to the three instances' routes,
as a load balancer would; each message is stored before the 200 and
answered by whichever instance holds the person's lease. Midway, with a
turn of every person under way (the answers held at the fake Cloud API, so
none of them is out), an instance holding some of them is SIGKILLed; the
rest is delivered to the two left. Every message must be answered exactly
once, in each person's order, by someone - the dead instance's people once
their leases (2 s here) expired - nothing is left open, the survivors
release their leases when they stop, and every audit chain verifies.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.cluster.checks import (
    assert_each_once_in_order,
    chats_leased_by,
    open_work,
    stop_clean,
)
from tests.cluster.kit import Cluster, ClusterOf, Instance
from tests.fakes import whatsapp_payloads as hooks
from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.waits import until
from tests.whatsapp.conftest import APP_SECRET
from tests.whatsapp.conftest import TOKEN as WA_TOKEN

PEOPLE = [f"49151000000{n:02d}" for n in range(6)]


@pytest.fixture
async def meta() -> AsyncIterator[FakeWhatsApp]:
    async with FakeWhatsApp(WA_TOKEN, APP_SECRET) as server:
        yield server


@pytest.fixture
def cluster(cluster_of: ClusterOf, meta: FakeWhatsApp) -> Cluster:
    return cluster_of(whatsapp=meta, whatsapp_people=PEOPLE)


def answered(meta: FakeWhatsApp) -> dict[str, list[str]]:
    return {p: meta.texts(p) for p in PEOPLE if meta.texts(p)}


def all_answered(meta: FakeWhatsApp, count: int) -> bool:
    texts = {t for texts in answered(meta).values() for t in texts}
    return texts >= {f"echo: q{n}" for n in range(count)}


async def test_three_instances_one_killed_every_whatsapp_message_answered_once_in_order(
    cluster: Cluster, meta: FakeWhatsApp, pg_url: str
) -> None:
    live = list(await asyncio.gather(*(cluster.launch(f"w{n}") for n in range(3))))
    asked: dict[str, list[str]] = {}
    count = 0

    async def deliver(to: list[Instance], n: int) -> None:
        nonlocal count
        for _ in range(n):
            person = PEOPLE[count % len(PEOPLE)]
            _, body = hooks.text(meta.phone_number_id, person, f"q{count}")
            assert await cluster.post_whatsapp(to[count % len(to)], body) == 200
            asked.setdefault(person, []).append(f"q{count}")
            count += 1

    await deliver(live, 30)  # a warm cluster: every instance answers some people
    await until(lambda: all_answered(meta, count), "the first 30 answers")

    meta.hold()  # from here answers wait at the Cloud API: none goes out
    await deliver(live, 30)
    holders: list[Instance] = []

    async def in_flight() -> bool:  # a turn of every person under way (each one leased)
        if not {m["to"] for m in meta.waiting} >= set(PEOPLE):
            return False
        holders[:] = [i for i in live if await chats_leased_by(pg_url, i.name)]
        return bool(holders)

    await until(in_flight, "every person's turn under way")
    victim = holders[0]
    await cluster.kill(victim)  # SIGKILL mid-conversation: its leases expire by themselves
    meta.release()  # the dead instance's held answers went nowhere
    survivors = [i for i in live if i is not victim]
    await deliver(survivors, 30)

    async def idle() -> bool:
        return all_answered(meta, count) and await open_work(pg_url) == 0

    await until(idle, "every message answered, nothing left open")
    assert_each_once_in_order(answered(meta), asked, cluster.instances)
    await stop_clean(cluster, survivors, live, pg_url)
