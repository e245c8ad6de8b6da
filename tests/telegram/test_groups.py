"""Groups: allow-listed only, answer when addressed, one session per person."""

from __future__ import annotations

from pathlib import Path

from bridge.core.config import load_settings
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, GROUP, TOKEN, running
from tests.telegram.fake_bot_api import BOT_USERNAME, FakeBotAPI

BOB = 222222
OTHER_GROUP = -1009999


def group_settings(home: Path, fake: FakeBotAPI):  # type: ignore[no-untyped-def]
    return load_settings(
        home=home,
        telegram={"token": TOKEN, "api_base_url": fake.base_url, "allowed_groups": [GROUP]},
        tenants={"alice": {"telegram_ids": [ALICE]}, "bob": {"telegram_ids": [BOB]}},
    )


def in_group(fake: FakeBotAPI, user: int, text: str, chat: int = GROUP, **kw: object) -> int:
    return fake.push_text(user, text, chat_id=chat, chat_type="supergroup", **kw)  # type: ignore[arg-type]


async def test_group_mentions_replies_and_per_person_sessions(home: Path, fake: FakeBotAPI) -> None:
    backend = ScriptedBackend("first", "second", "third")
    async with running(group_settings(home, fake), fake, backend) as run:
        in_group(fake, ALICE, "talking among ourselves")
        in_group(fake, ALICE, "/help@other_bot")
        mention = f"@{BOT_USERNAME} remember the number 7"
        entities = [{"type": "mention", "offset": 0, "length": len(BOT_USERNAME) + 1}]
        in_group(fake, ALICE, mention, entities=entities, message_id=77)
        await fake.wait_until(lambda: len(fake.sent_to(GROUP)) == 1)
        in_group(fake, BOB, "what number did alice say?", reply_to_bot=True)
        await fake.wait_until(lambda: len(fake.sent_to(GROUP)) == 2)
        in_group(fake, ALICE, f"/whoami@{BOT_USERNAME}")
        await fake.wait_until(lambda: len(fake.sent_to(GROUP)) == 3)
        # a group that is not allow-listed is ignored even when it mentions the bot
        in_group(fake, ALICE, mention, chat=OTHER_GROUP, entities=entities)
        in_group(fake, ALICE, f"@{BOT_USERNAME} last", entities=entities)
        await run.idle()
        assert len(fake.sent_to(GROUP)) == 4 and fake.sent_to(OTHER_GROUP) == []

    texts = [m.text for m in fake.sent_to(GROUP)]
    assert texts[0] == "first" and texts[1] == "second" and texts[3] == "third"
    assert "alice" in texts[2]
    first_send = fake.calls_of("sendMessage")[0]
    assert first_send.params["reply_parameters"]["message_id"] == 77
    asked = [r.messages[-1].content for r in backend.requests]
    replying = "(replying to:\n> earlier answer)\n\n"  # bob replied to the bot's message
    assert asked == ["remember the number 7", replying + "what number did alice say?", "last"]
    # bob's session does not contain alice's message; alice's third turn has her first
    bob_history = [m.content for m in backend.requests[1].messages]
    assert "remember the number 7" not in bob_history
    alice_history = [m.content for m in backend.requests[2].messages]
    assert "remember the number 7" in alice_history


async def test_stranger_in_an_allowed_group_is_refused_once(home: Path, fake: FakeBotAPI) -> None:
    backend = ScriptedBackend()
    stranger = 31337
    entities = [{"type": "mention", "offset": 0, "length": len(BOT_USERNAME) + 1}]
    async with running(group_settings(home, fake), fake, backend) as run:
        for _ in range(3):
            in_group(fake, stranger, f"@{BOT_USERNAME} hi", entities=entities)
        in_group(fake, ALICE, f"@{BOT_USERNAME} hi", entities=entities)
        await run.idle()
    texts = [m.text for m in fake.sent_to(GROUP)]
    assert sum("private chat" in t for t in texts) == 1
    assert len(backend.requests) == 1


async def test_channel_forwards_and_channel_posts_are_ignored_silently(
    home: Path, fake: FakeBotAPI
) -> None:
    """A post auto-forwarded from a linked channel (sender 777000, sender_chat,
    is_automatic_forward), a message sent on behalf of a chat, and channel posts
    get no refusal and no answer, even when they mention the bot."""
    backend = ScriptedBackend("only alice")
    entities = [{"type": "mention", "offset": 0, "length": len(BOT_USERNAME) + 1}]
    text = f"@{BOT_USERNAME} new post"
    channel_chat = {"id": -1007777, "type": "channel", "title": "news"}
    async with running(group_settings(home, fake), fake, backend) as run:
        in_group(
            fake,
            777000,
            text,
            entities=entities,
            extra={"is_automatic_forward": True, "sender_chat": channel_chat},
        )
        in_group(fake, 777000, text, entities=entities)
        in_group(fake, 136817688, text, entities=entities, extra={"sender_chat": channel_chat})
        in_group(fake, ALICE, text, entities=entities, extra={"is_automatic_forward": True})
        fake.push(
            {"channel_post": fake.message(777000, text, chat_id=-1007777, chat_type="channel")}
        )
        in_group(fake, ALICE, f"@{BOT_USERNAME} hi", entities=entities)
        await run.idle()
    assert [m.text for m in fake.sent_to(GROUP)] == ["only alice"]
    assert fake.sent_to(-1007777) == []
    assert len(backend.requests) == 1
