"""The bot's Bot API calls share a small pool of connections, however many are in flight.

httpcore looks at every pooled connection for each request it places, so a
pool grown to a burst's size makes every later call dearer
(`bridge.channels.telegram.channel`): calls beyond `TelegramOptions.connections`
wait for a free connection (and then all go through) instead of opening more.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from tests.telegram.conftest import ALICE, NO_DRAFTS, running, tg_settings
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import until


async def test_twenty_calls_at_once_use_at_most_the_pools_connections(
    home: Path, fake: FakeBotAPI
) -> None:
    options = replace(NO_DRAFTS, connections=4)
    async with running(tg_settings(home, fake), fake, options=options) as run:
        fake.hold("sendChatAction")  # every call stays in flight until released
        calls = [asyncio.create_task(run.channel.sender.typing(ALICE)) for _ in range(20)]
        await until(lambda: len(fake.calls_of("sendChatAction")) >= 4, "the pool's calls arrive")
        fake.release()
        await asyncio.gather(*calls)
    assert len(fake.calls_of("sendChatAction")) == 20  # none was lost or failed
    assert 1 <= len(fake.peers["sendChatAction"]) <= 4


def test_the_default_pool_is_small() -> None:
    assert NO_DRAFTS.connections == 8
