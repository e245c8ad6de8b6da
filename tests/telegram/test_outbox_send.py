"""Outbox entries to Telegram: one attempt each, failures classified for the outbox.

The error texts are the Bot API's own (as its clients report them): 403
"Forbidden: bot was blocked by the user" / "bot was kicked from the group
chat" / "user is deactivated", 400 "Bad Request: chat not found", 429 with
`retry_after`, 5xx and dropped connections.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bridge.channels.telegram.outbox import chat_id_of
from bridge.schedule.outbox import DeliveryError, OutboxEntry
from tests.telegram.conftest import ALICE, GROUP, NO_DRAFTS, running, tg_settings
from tests.telegram.fake_bot_api import Failure, FakeBotAPI

RAW = replace(NO_DRAFTS, rate_limiter=False)  # 429s reach the sender unretried


def entry(chat: str, text: str = "⏰ stretch") -> OutboxEntry:
    return OutboxEntry(7, "alice", "telegram", chat, "job:x:1", text, "queued", 0, 0, 1, "", None)


def test_a_group_persons_chat_posts_to_the_group() -> None:
    assert chat_id_of(f"{GROUP}:{ALICE}") == GROUP and chat_id_of(str(ALICE)) == ALICE


@pytest.mark.parametrize(
    ("failure", "kind", "permanent", "retry_after_ms"),
    [
        (Failure(403, "Forbidden: bot was blocked by the user"), "forbidden", True, 0),
        (Failure(403, "Forbidden: bot was kicked from the group chat"), "forbidden", True, 0),
        (Failure(403, "Forbidden: user is deactivated"), "forbidden", True, 0),
        (Failure(400, "Bad Request: chat not found"), "not_found", True, 0),
        (Failure(400, "Bad Request: message text is empty"), "rejected", True, 0),
        (Failure.flood(retry_after=17), "rate_limited", False, 17_000),
        (Failure.bad_gateway(), "network", False, 0),
        (Failure.server_error(), "network", False, 0),
    ],
)
async def test_failures_are_classified_after_one_attempt(
    home: Path,
    fake: FakeBotAPI,
    failure: Failure,
    kind: str,
    permanent: bool,
    retry_after_ms: int,
) -> None:
    async with running(tg_settings(home, fake), fake, options=RAW) as r:
        fake.fail("sendMessage", failure)
        with pytest.raises(DeliveryError) as caught:
            await r.channel.deliver(entry(str(ALICE)))
        error = caught.value
        assert (error.kind, error.permanent, error.retry_after_ms) == (
            kind,
            permanent,
            retry_after_ms,
        )
        assert len(fake.calls_of("sendMessage")) == 1  # the outbox retries, not the sender
        await r.channel.deliver(entry(str(ALICE)))  # the next attempt goes through
    assert [m.text for m in fake.sent_to(ALICE)] == ["⏰ stretch"]


async def test_a_long_message_arrives_in_valid_parts(home: Path, fake: FakeBotAPI) -> None:
    text = "\n\n".join(f"line {n} " + "x" * 300 for n in range(40))
    async with running(tg_settings(home, fake), fake) as r:
        await r.channel.deliver(entry(str(ALICE), text))
    parts = [m.text for m in fake.sent_to(ALICE)]
    assert len(parts) >= 3 and "line 0" in parts[0] and "line 39" in parts[-1]


async def test_an_unusable_chat_id_is_a_dead_letter(home: Path, fake: FakeBotAPI) -> None:
    async with running(tg_settings(home, fake), fake) as r:
        with pytest.raises(DeliveryError) as caught:
            await r.channel.deliver(entry("default"))
    assert caught.value.kind == "not_found" and caught.value.permanent
    assert fake.calls_of("sendMessage") == []
