"""Three real `roost serve` instances on one home and one PostgreSQL serve one Telegram bot.

Issue 25 items 2 and 4. Updates are delivered round-robin to the three
instances' webhook routes (as a load balancer would); each is stored before
the 200 and answered by whichever instance holds its chat's lease. Midway,
with a turn of every chat under way (the replies held at the fake Bot API,
so none of them is out), one instance is killed with SIGKILL; the rest is
delivered to the two left. Every question must be answered exactly once,
in each chat's order, by someone - the dead instance's chats once their
leases (2 s here) expired - and every instance's audit chain verifies.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.cluster.checks import (
    assert_each_once_in_order,
    chats_leased_by,
    open_work,
    stop_clean,
)
from tests.cluster.kit import Cluster, ClusterOf, Instance, private_message
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import until

PEOPLE = [111_111 + n for n in range(6)]
# questions delivered in each of the three phases: two per chat. Each chat's answers are
# paced by the instance that sends them (bridge/channels/telegram/pace.py: a burst of 3,
# then one a second, Telegram's per-chat limit): fifteen a chat made this test wait a
# second per answer; with two a phase, every chat still has a turn under way at the kill,
# one queued behind it and two more after it, all to be answered once and in order.
EACH = 2 * len(PEOPLE)


@pytest.fixture
def cluster(cluster_of: ClusterOf) -> Cluster:
    return cluster_of(people=PEOPLE)


def answered(fake: FakeBotAPI) -> dict[int, list[str]]:
    return {p: [m.text for m in fake.sent_to(p)] for p in PEOPLE if fake.sent_to(p)}


async def test_three_instances_one_killed_every_message_answered_once_in_order(
    cluster: Cluster, bot_api: FakeBotAPI, pg_url: str
) -> None:
    live = list(await asyncio.gather(*(cluster.launch(f"i{n}") for n in range(3))))
    asked: dict[int, list[str]] = {}
    count = 0

    async def deliver(to: list[Instance], n: int) -> None:
        nonlocal count
        for _ in range(n):
            person = PEOPLE[count % len(PEOPLE)]
            update = private_message(1 + count, person, f"q{count}", 500 + count)
            assert await cluster.post_update(to[count % len(to)], update) == 200
            asked.setdefault(person, []).append(f"q{count}")
            count += 1

    await deliver(live, EACH)  # a warm cluster: every instance answers some chats
    await until(lambda: _all_answered(bot_api, count), "the first answers")

    bot_api.hold("sendMessage")  # from here replies wait at the Bot API: none goes out
    await deliver(live, EACH)
    holders: list[Instance] = []

    async def in_flight() -> bool:  # a turn of every chat under way (each chat leased)
        held = {int(c.params["chat_id"]) for c in bot_api.calls_of("sendMessage")[EACH:]}
        if not held >= set(PEOPLE):
            return False
        holders[:] = [i for i in live if await chats_leased_by(pg_url, i.name)]
        return bool(holders)

    await until(in_flight, "every chat's turn under way")
    victim = holders[0]  # one holding chats now (the chats need not spread over all three)
    await cluster.kill(victim)  # SIGKILL mid-conversation: its leases expire by themselves
    bot_api.release()  # the dead instance's held replies went nowhere
    survivors = [i for i in live if i is not victim]
    await deliver(survivors, EACH)

    async def idle() -> bool:
        return _all_answered(bot_api, count) and await open_work(pg_url) == 0

    await until(idle, "every question answered, nothing left open")
    assert_each_once_in_order(answered(bot_api), asked, cluster.instances)
    await stop_clean(cluster, survivors, live, pg_url)


def _all_answered(fake: FakeBotAPI, count: int) -> bool:
    texts = {t for texts in answered(fake).values() for t in texts}
    return texts >= {f"echo: q{n}" for n in range(count)}
