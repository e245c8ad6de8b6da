"""Two real `roost serve` instances on one PostgreSQL share one bot in polling mode.

Only the holder of the lease `telegram:poll:<bot>` polls `getUpdates`; the
updates it stores are answered by whichever instance holds each chat's
lease. When the poller is killed with SIGKILL, the other instance takes the
poll lease once it expired (2 s here) and goes on: every question is
answered exactly once, in each chat's order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.cluster.checks import assert_each_once_in_order, open_work
from tests.cluster.kit import TOKEN, ClusterOf, Instance
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import until

PEOPLE = [222_222 + n for n in range(4)]
# questions before the kill and after it: two per chat. Each chat's answers are paced by
# the instance that sends them (bridge/channels/telegram/pace.py: a burst of 3, then one
# a second, Telegram's per-chat limit): ten a chat made this test wait a second an answer.
EACH = 2 * len(PEOPLE)
POLLS = "this instance polls for the bot"


@pytest.fixture
async def bot_api() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI(TOKEN, max_poll_s=1.0) as server:
        yield server


def answered(fake: FakeBotAPI) -> dict[int, list[str]]:
    return {p: [m.text for m in fake.sent_to(p)] for p in PEOPLE if fake.sent_to(p)}


def all_answered(fake: FakeBotAPI, count: int) -> bool:
    texts = {t for texts in answered(fake).values() for t in texts}
    return texts >= {f"echo: q{n}" for n in range(count)}


def pollers(live: list[Instance]) -> list[Instance]:
    return [inst for inst in live if POLLS in inst.stderr()]


async def test_one_instance_polls_and_another_takes_over_after_a_kill(
    cluster_of: ClusterOf, pg_url: str, bot_api: FakeBotAPI
) -> None:
    cluster = cluster_of(people=PEOPLE, extra={"ROOST_TELEGRAM__MODE": "polling"})
    live = list(await asyncio.gather(cluster.launch("p0"), cluster.launch("p1")))
    asked: dict[int, list[str]] = {}
    for n in range(EACH):
        person = PEOPLE[n % len(PEOPLE)]
        bot_api.push_text(person, f"q{n}")
        asked.setdefault(person, []).append(f"q{n}")

    async def settled() -> bool:  # answered and marked: the kill hits no turn
        return all_answered(bot_api, EACH) and await open_work(pg_url) == 0

    await until(settled, "the first answers")
    first = pollers(live)
    assert len(first) == 1, [inst.stderr()[-2000:] for inst in live]
    await cluster.kill(first[0])
    for n in range(EACH, 2 * EACH):
        person = PEOPLE[n % len(PEOPLE)]
        bot_api.push_text(person, f"q{n}")
        asked.setdefault(person, []).append(f"q{n}")

    async def idle() -> bool:
        return all_answered(bot_api, 2 * EACH) and await open_work(pg_url) == 0

    await until(idle, "every question answered after the poller died")
    survivor = next(inst for inst in live if inst is not first[0])
    assert POLLS in survivor.stderr()
    assert_each_once_in_order(answered(bot_api), asked, cluster.instances)
    assert await cluster.stop(survivor) == 0
