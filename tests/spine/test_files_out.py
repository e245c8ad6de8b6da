"""Files out over Telegram: `/export` arrives as a document, groups are refused, 50 MB holds.

The real python-telegram-bot Application talks to the fake Bot API, which
takes `sendDocument` as a multipart upload, as Telegram does, and answers
an upload over the bots' 50 MB limit with 413. The roost writes a real audit
chain, so `data.exported` is checked in it and the chain verified.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.audit.verify import verify
from bridge.channels.telegram.channel import TelegramChannel
from bridge.core.commands import Command, CommandContext
from bridge.core.config import Settings, load_settings
from bridge.types.messages import Final, OutFile
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, GROUP, NO_DRAFTS, TOKEN
from tests.telegram.fake_bot_api import BOT_USERNAME, FakeBotAPI
from tests.waits import HANG_S

WAIT_S = HANG_S  # a safety net against a hung run, not a speed check


def tg(home: Path, bot: FakeBotAPI) -> Settings:
    return load_settings(
        home=home,
        telegram={"token": TOKEN, "api_base_url": bot.base_url, "allowed_groups": [GROUP]},
        tenants={"alice": {"telegram_ids": [ALICE]}, "bob": {"telegram_ids": [222]}},
    )


@pytest.fixture
async def bot() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI(TOKEN, max_poll_s=1.0) as server:
        yield server


@pytest.fixture
async def live(home: Path, bot: FakeBotAPI) -> AsyncIterator[tuple[Roost, TelegramChannel]]:
    roost = await build(tg(home, bot), backend=ScriptedBackend("noted: plums"))  # real chain
    # no drafts: a busy machine would otherwise show "noted: plums …" before the final text
    channel = TelegramChannel(
        roost.settings.telegram, roost.core.answer, roost.command_list, NO_DRAFTS
    )
    await channel.start()
    try:
        yield roost, channel
    finally:
        await channel.stop()
        await roost.aclose()


async def reply_to(bot: FakeBotAPI, text: str, chat: int = ALICE, **kw: object) -> str:
    before = len(bot.sent_to(chat))
    bot.push_text(ALICE, text, chat_id=chat, **kw)  # type: ignore[arg-type]
    await bot.wait_until(lambda: len(bot.sent_to(chat)) > before, WAIT_S)
    return bot.sent_to(chat)[-1].text


def chain_events(home: Path, event: str) -> list[dict[str, object]]:
    lines = (home / "audit" / "chain.jsonl").read_text().splitlines()
    return [rec for rec in map(json.loads, lines) if rec["event"] == event]


async def test_export_in_a_private_chat_arrives_as_a_zip_document(
    home: Path, bot: FakeBotAPI, live: tuple[Roost, TelegramChannel]
) -> None:
    assert await reply_to(bot, "I like plums") == "noted: plums"
    text = await reply_to(bot, "/export")
    assert text.startswith("Here is everything roost keeps about you")
    await bot.wait_until(lambda: len(bot.documents_to(ALICE)) == 1, WAIT_S)
    (doc,) = bot.documents_to(ALICE)
    assert doc.upload.filename.startswith("roost-export-alice-")
    assert doc.upload.filename.endswith(".zip")
    with zipfile.ZipFile(io.BytesIO(doc.upload.data)) as zf:
        assert zf.testzip() is None
        readme = zf.read("README.txt").decode()
        history = zf.read("db/session_messages.jsonl").decode()
    assert "Everything roost holds about tenant alice" in readme
    assert "I like plums" in history and "noted: plums" in history
    (record,) = chain_events(home, "data.exported")
    assert record["tenant"] == "alice"
    details = record["details"]
    assert isinstance(details, dict)
    assert details["by"] == "user" and details["channel"] == "telegram"
    assert details["bytes"] == len(doc.upload.data) and details["rows"] >= 2
    assert "plums" not in json.dumps(record)
    assert verify(home / "audit" / "chain.jsonl").ok
    kept = sorted((home / "tenants" / "alice" / "out").iterdir())
    assert [p.name for p in kept] == [doc.upload.filename]
    assert kept[0].stat().st_mode & 0o777 == 0o600


async def test_export_is_refused_in_a_group_with_the_reason(
    home: Path, bot: FakeBotAPI, live: tuple[Roost, TelegramChannel]
) -> None:
    command = f"/export@{BOT_USERNAME}"
    entities = [{"type": "bot_command", "offset": 0, "length": len(command)}]
    text = await reply_to(bot, command, chat=GROUP, chat_type="supergroup", entities=entities)
    assert "only in a private chat" in text and "Send /export to me directly" in text
    assert bot.documents == []
    assert not (home / "tenants" / "alice" / "out").exists()
    assert chain_events(home, "data.exported") == []


async def test_a_file_over_50_mb_is_not_uploaded_and_the_chat_is_told(
    home: Path, bot: FakeBotAPI, live: tuple[Roost, TelegramChannel]
) -> None:
    roost, _ = live
    big = roost.tenant_dirs("alice").workspace / "big.bin"
    with big.open("wb") as fh:
        fh.truncate(50 * 1024 * 1024 + 1)  # sparse: one byte over the limit

    async def handler(ctx: CommandContext, args: str) -> Final:
        return Final("here it is", "command", (OutFile(big, "big.bin"),))

    roost.core.commands.add(Command("big", "/big", "a big file", handler))
    assert await reply_to(bot, "/big") == "here it is"
    await bot.wait_until(lambda: "50 MB" in bot.sent_to(ALICE)[-1].text, WAIT_S)
    assert "big.bin is 50.0 MB, more than the 50 MB" in bot.sent_to(ALICE)[-1].text
    assert bot.calls_of("sendDocument") == []


async def test_the_fake_refuses_an_upload_over_the_limit_as_telegram_does(bot: FakeBotAPI) -> None:
    import aiohttp

    form = aiohttp.FormData()
    form.add_field("chat_id", str(ALICE))
    form.add_field("document", io.BytesIO(b"\0" * (50 * 1024 * 1024 + 1)), filename="x.bin")
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{bot.base_url}{TOKEN}/sendDocument", data=form) as r,
    ):
        assert r.status == 413 and "Request Entity Too Large" in await r.text()
    assert bot.documents == []


async def test_a_reply_file_outside_the_tenant_or_through_a_link_is_not_attached(
    home: Path, bot: FakeBotAPI, live: tuple[Roost, TelegramChannel]
) -> None:
    roost, _ = live
    theirs = roost.tenant_dirs("bob").workspace / "secret.txt"
    theirs.write_text("bob's")
    link = roost.tenant_dirs("alice").workspace / "link.txt"
    os.symlink(theirs, link)
    files = (OutFile(theirs, "secret.txt"), OutFile(link, "link.txt"))

    async def handler(ctx: CommandContext, args: str) -> Final:
        return Final("two files", "command", files)

    roost.core.commands.add(Command("steal", "/steal", "another's file", handler))
    text = await reply_to(bot, "/steal")
    assert text.startswith("two files") and "could not be attached" in text
    assert bot.calls_of("sendDocument") == []
