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
import inspect
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import asyncpg
import pytest

from tests.cluster.kit import LIMIT_S, Cluster, Instance, private_message
from tests.fakes.fake_openai import FakeOpenAI
from tests.telegram.fake_bot_api import FakeBotAPI

PEOPLE = [111_111 + n for n in range(6)]


@pytest.fixture
async def cluster(
    tmp_path: Path, pg_url: str, model: FakeOpenAI, bot_api: FakeBotAPI
) -> AsyncIterator[Cluster]:
    made = Cluster(
        tmp_path,
        db_url=pg_url,
        model_url=model.base_url,
        bot_api_url=bot_api.base_url,
        people=PEOPLE,
        lease_s=2.0,
    )
    try:
        yield made
    finally:
        await made.aclose()


def answered(fake: FakeBotAPI) -> dict[int, list[str]]:
    return {p: [m.text for m in fake.sent_to(p)] for p in PEOPLE if fake.sent_to(p)}


async def open_work(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(
            await conn.fetchval(
                "SELECT (SELECT COUNT(*) FROM channel_inbox WHERE state IN ('new', 'working'))"
                " + (SELECT COUNT(*) FROM outbox WHERE state = 'queued')"
            )
        )
    finally:
        await conn.close()


async def chats_leased_by(url: str, instance: str) -> list[str]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT name FROM storage_leases WHERE name LIKE 'chat:%' AND owner LIKE $1",
            f"{instance}:%",
        )
    finally:
        await conn.close()
    return [r["name"] for r in rows]


async def until(check: Callable[[], object], what: str) -> None:
    """Until `check()` (a bool, or an awaitable of one) holds; `what` names it on a hang."""
    try:
        async with asyncio.timeout(LIMIT_S):
            while True:
                got = check()
                if await got if inspect.isawaitable(got) else got:
                    return
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"waited {LIMIT_S:g} s for {what}") from None


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

    await deliver(live, 30)  # a warm cluster: every instance answers some chats
    await until(lambda: _all_answered(bot_api, count), "the first 30 answers")

    bot_api.hold("sendMessage")  # from here replies wait at the Bot API: none goes out
    await deliver(live, 30)
    holders: list[Instance] = []

    async def in_flight() -> bool:  # a turn of every chat under way (each chat leased)
        held = {int(c.params["chat_id"]) for c in bot_api.calls_of("sendMessage")[30:]}
        if not held >= set(PEOPLE):
            return False
        holders[:] = [i for i in live if await chats_leased_by(pg_url, i.name)]
        return bool(holders)

    await until(in_flight, "every chat's turn under way")
    victim = holders[0]  # one holding chats now (the chats need not spread over all three)
    await cluster.kill(victim)  # SIGKILL mid-conversation: its leases expire by themselves
    bot_api.release()  # the dead instance's held replies went nowhere
    survivors = [i for i in live if i is not victim]
    await deliver(survivors, 30)

    async def idle() -> bool:
        return _all_answered(bot_api, count) and await open_work(pg_url) == 0

    await until(idle, "every question answered, nothing left open")
    got = answered(bot_api)
    every = Counter(text for texts in got.values() for text in texts)
    assert [t for t, n in every.items() if n > 1] == []
    assert got == {p: [f"echo: {q}" for q in qs] for p, qs in asked.items()}

    for inst in survivors:
        assert await cluster.stop(inst) == 0, inst.stderr()[-3000:]
    assert await chats_leased_by(pg_url, "") == []  # a clean stop released them
    code, out = await cluster.audit_verify()
    assert code == 0, out
    assert all(i.name in out for i in live), out


def _all_answered(fake: FakeBotAPI, count: int) -> bool:
    texts = {t for texts in answered(fake).values() for t in texts}
    return texts >= {f"echo: q{n}" for n in range(count)}
