"""A flood of strangers on Telegram grows the real audit chain by a bounded amount.

Real roost, real audit chain on disk, real python-telegram-bot against the
fake Bot API (issue 9, item 9). 300 distinct strangers write once each and
one stranger keeps sending wrong pairing codes long after the lockout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path

from bridge.app.build import Roost, build
from bridge.channels.telegram.channel import TelegramChannel
from bridge.core.config import Settings
from bridge.core.strangers import StrangerLimits
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import NO_DRAFTS, count_handled, tg_settings
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import until

STRANGERS = 130  # over twice the per-window cap of records (50)
FIRST = 7_000_000
PAIRER = 6_999_999
PAIR_TRIES = 30
UNPACED = dataclasses.replace(NO_DRAFTS, rate_limiter=False)


@contextlib.asynccontextmanager
async def with_chain(settings: Settings, handled: list[int]) -> AsyncIterator[Roost]:
    """A roost whose audit sink is its real hash chain, and its Telegram channel
    (`handled` counts the updates that went all the way through it)."""
    roost = await build(settings, backend=ScriptedBackend("never"))
    try:
        channel = TelegramChannel(settings.telegram, roost.core.answer, roost.command_list, UNPACED)
        count_handled(channel, handled)
        await channel.start()
        try:
            yield roost
        finally:
            await channel.stop()
    finally:
        await roost.aclose()


def records(home: Path) -> list[dict[str, object]]:
    lines = (home / "audit" / "chain.jsonl").read_bytes().splitlines()
    return [json.loads(line) for line in lines]


async def test_stranger_flood_on_telegram_is_bounded_in_the_chain(
    home: Path, fake: FakeBotAPI
) -> None:
    settings = tg_settings(home, fake)
    handled = [0]
    async with with_chain(settings, handled) as roost:
        start = len(records(home))
        for _ in range(PAIR_TRIES):
            fake.push_text(PAIRER, "/pair WRONGCDE")
        for n in range(STRANGERS):
            fake.push_text(FIRST + n, "hello?")
        await fake.wait_until(lambda: len(fake.calls_of("sendMessage")) == STRANGERS + 5)
        for n in range(0, STRANGERS, 3):  # again: no new reply, no new record
            fake.push_text(FIRST + n, "anyone?")
        fake.push_text(FIRST + STRANGERS, "last")
        await until(lambda: handled[0] >= fake.pushed, "every update handled")
        assert len(fake.calls_of("sendMessage")) == STRANGERS + 6
        assert roost.backend.requests == []  # type: ignore[attr-defined]
    new = records(home)[start:]
    cap = StrangerLimits().records_per_window
    assert len(new) <= cap + 2, "the per-window cap plus one aggregate per event kind"
    kinds = [r["event"] for r in new]
    # the access check awaits the database, so different chats' checks interleave: the
    # pairer's first failure is one of the cap's records or, once the cap is full, counted
    failed = kinds.count("pairing.failed")
    assert failed in (0, 1)
    assert kinds.count("access.refused") == cap - failed
    floods = {r["details"]["event"]: r["details"] for r in new if r["event"] == "access.flood"}  # type: ignore[index]
    # everything is accounted for: recorded + suppressed + aggregated = what happened
    assert floods["pairing.failed"]["count"] == PAIR_TRIES - failed  # type: ignore[index]
    refused = STRANGERS + 1 - (cap - failed)
    assert floods["access.refused"] == {
        "event": "access.refused",
        "count": refused,
        "identities": refused,
        "window_s": 3600,
    }
