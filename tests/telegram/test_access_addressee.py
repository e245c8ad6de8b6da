"""Commands addressed to another bot are not ours (issue 9, item 14, the core half).

`/whoami@other_bot` or `/reset@other_bot` gets no reply and runs nothing, in
private chats and in groups, from known people and strangers alike;
`/cmd@<our bot>` works. Through the real Telegram channel and fake Bot API.
"""

from __future__ import annotations

from pathlib import Path

from bridge.core.commands import parse_command
from bridge.core.config import load_settings
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, GROUP, TOKEN, running, tg_settings
from tests.telegram.fake_bot_api import BOT_USERNAME, FakeBotAPI

STRANGER = 999002


def test_parse_command_knows_who_a_command_is_for() -> None:
    parsed = parse_command("/whoami@Other_Bot now")
    assert parsed is not None and parsed.addressee == "Other_Bot"
    assert parsed.for_another_bot(BOT_USERNAME)
    ours = parse_command(f"/whoami@{BOT_USERNAME.upper()}")
    assert ours is not None and not ours.for_another_bot(BOT_USERNAME)
    plain = parse_command("/whoami")
    assert plain is not None and not plain.for_another_bot(BOT_USERNAME)
    # a channel that names no bot (web, terminal) takes every addressee as its own
    assert not parsed.for_another_bot(None) and not parsed.for_another_bot("")


async def test_private_chat_ignores_commands_for_another_bot(home: Path, fake: FakeBotAPI) -> None:
    backend = ScriptedBackend("one", "two")
    async with running(tg_settings(home, fake), fake, backend) as run:
        fake.push_text(ALICE, "remember me")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 1)
        for text in ("/whoami@other_bot", "/reset@other_bot", "/help@OtherBot x", "/nosuch@x_bot"):
            fake.push_text(ALICE, text)
        fake.push_text(ALICE, f"/whoami@{BOT_USERNAME}")
        await run.idle()
        replies = [m.text for m in fake.sent_to(ALICE)]
        assert len(replies) == 2 and "Tenant: alice" in replies[1]
        commands = [e[2]["name"] for e in run.audit.events if e[0] == "command.run"]
        assert commands == ["whoami"]
        # /reset@other_bot did not reset: the next turn still has the history
        fake.push_text(ALICE, "still there?")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 3)
        history = [m.content for m in backend.requests[1].messages if m.content[:6] != "[Now: "]
        assert history == ["remember me", "one", "still there?"]


async def test_group_ignores_commands_for_another_bot(home: Path, fake: FakeBotAPI) -> None:
    settings = load_settings(
        home=home,
        telegram={"token": TOKEN, "api_base_url": fake.base_url, "allowed_groups": [GROUP]},
        tenants={"alice": {"telegram_ids": [ALICE]}},
    )

    def in_group(user: int, text: str, **kw: object) -> None:
        fake.push_text(user, text, chat_id=GROUP, chat_type="supergroup", **kw)  # type: ignore[arg-type]

    async with running(settings, fake) as run:
        mention = f"@{BOT_USERNAME} /whoami@other_bot"
        at = [{"type": "mention", "offset": 0, "length": len(BOT_USERNAME) + 1}]
        in_group(ALICE, mention, entities=at)
        in_group(ALICE, "/reset@other_bot", reply_to_bot=True)
        in_group(STRANGER, "/whoami@other_bot", reply_to_bot=True)
        in_group(ALICE, f"/whoami@{BOT_USERNAME}")
        await run.idle()
        assert len(fake.sent_to(GROUP)) == 1 and "Tenant: alice" in fake.sent_to(GROUP)[0].text
        commands = [e[2]["name"] for e in run.audit.events if e[0] == "command.run"]
        assert commands == ["whoami"]
        assert not [e for e in run.audit.events if e[0] == "access.refused"]


async def test_pair_for_another_bot_is_not_tried(home: Path, fake: FakeBotAPI) -> None:
    async with running(tg_settings(home, fake), fake) as run:
        code = await run.pairing.issue("alice")
        fake.push_text(STRANGER, f"/pair@other_bot {code}")
        fake.push_text(STRANGER, "/start@other_bot")
        await run.idle()
        assert fake.sent_to(STRANGER) == []
        assert await run.pairing.bound_tenant("telegram", str(STRANGER)) is None
        assert not [e for e in run.audit.events if e[0].startswith(("pairing.", "access."))]
