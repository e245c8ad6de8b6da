"""A reply to an earlier message passes the quoted text to the model.

Telegram through the fake Bot API with `reply_to_message` and `quote` shaped as
the Bot API documents them (a Message without a nested reply; a TextQuote with
text, position and is_manual; a photo with a caption), and the web API's
optional `quote` field over a real socket. The model reads "(replying to: > …)"
before the new message, cut to a sane size and masked like all input; the audit
chain records only its length.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bridge.app.build import build
from bridge.channels.web.channel import WebChannel
from bridge.core.config import Settings
from bridge.core.sessions import SessionKey
from bridge.loadout import vault
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, ScriptedBackend
from tests.telegram.conftest import ALICE, TOKEN, running, tg_settings
from tests.telegram.fake_bot_api import BOT_ID, FakeBotAPI

EARLIER = "Your flight LH 1234 leaves Graz at 06:40 from gate B12.\nBoarding closes at 06:20."


def earlier_message(chat: dict[str, Any], **content: Any) -> dict[str, Any]:
    """The replied-to message as the Bot API nests it (no further reply_to_message)."""
    return {
        "message_id": 41,
        "date": int(time.time()) - 60,
        "chat": chat,
        "from": {"id": BOT_ID, "is_bot": True, "first_name": "roost"},
        **content,
    }


def private_chat() -> dict[str, Any]:
    return {"id": ALICE, "type": "private", "first_name": f"user{ALICE}"}


def asked(backend: ScriptedBackend, index: int = -1) -> str:
    return backend.requests[index].messages[-1].content


@pytest.fixture
async def bot_api() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI(TOKEN, max_poll_s=2.0) as server:
        yield server


async def test_telegram_replies_pass_the_quote_or_the_replied_to_text(
    home: Path, bot_api: FakeBotAPI
) -> None:
    backend = ScriptedBackend("a", "b", "c", "d")
    async with running(tg_settings(home, bot_api), bot_api, backend) as run:
        reply = {"reply_to_message": earlier_message(private_chat(), text=EARLIER)}
        bot_api.push_text(ALICE, "when do I have to be there?", extra=reply)
        await bot_api.wait_until(lambda: len(bot_api.sent_to(ALICE)) == 1)
        quote = {"text": "gate B12", "position": 46, "is_manual": True}
        bot_api.push_text(ALICE, "where is that?", extra={**reply, "quote": quote})
        await bot_api.wait_until(lambda: len(bot_api.sent_to(ALICE)) == 2)
        photo = [{"file_id": "AgAD", "file_unique_id": "AQAD", "width": 90, "height": 67}]
        captioned = earlier_message(private_chat(), photo=photo, caption="the boarding pass")
        bot_api.push_text(ALICE, "is this valid?", extra={"reply_to_message": captioned})
        await bot_api.wait_until(lambda: len(bot_api.sent_to(ALICE)) == 3)
        bot_api.push_text(ALICE, "no reply here")
        await bot_api.wait_until(lambda: len(bot_api.sent_to(ALICE)) == 4)
        events = run.audit.events

    assert asked(backend, 0) == (
        "(replying to:\n> Your flight LH 1234 leaves Graz at 06:40 from gate B12.\n"
        "> Boarding closes at 06:20.)\n\nwhen do I have to be there?"
    )
    assert asked(backend, 1) == "(replying to:\n> gate B12)\n\nwhere is that?"
    assert asked(backend, 2) == "(replying to:\n> the boarding pass)\n\nis this valid?"
    assert asked(backend, 3) == "no reply here"
    received = [d for e, _, d in events if e == "message.received"]
    assert [d["quoted_chars"] for d in received] == [len(EARLIER), 8, 17, 0]
    assert all("gate" not in str(d) for _, _, d in events)


async def test_a_long_quote_is_cut_and_masked(home: Path, bot_api: FakeBotAPI) -> None:
    backend = ScriptedBackend("ok")
    value = "ghp_R8x2Kq9LmZ4vT7wYb1Nc6Hd3Jf5Gs0Pa2Ue8"
    async with running(tg_settings(home, bot_api), bot_api, backend) as run:
        vault.set_value(run.roost.tenant_dirs("alice"), "gh_token", value)
        long = f"the token {value} " + "blah " * 2000
        reply = {"reply_to_message": earlier_message(private_chat(), text=long[:4096])}
        bot_api.push_text(ALICE, "what was that token?", extra=reply)
        await bot_api.wait_until(lambda: len(bot_api.sent_to(ALICE)) == 1)
        key = SessionKey("alice", "telegram", str(ALICE))
        history = (await run.roost.sessions.load(key, time.time())).history
    text = asked(backend)
    assert value not in text and "the token [vault:gh_token] blah" in text
    assert text.startswith("(replying to:\n> the token ") and text.endswith(
        " …)\n\nwhat was that token?"
    )
    assert len(text) < 1_100
    assert value not in history[0].content and history[0].content.startswith("(replying to:")


@pytest.fixture
async def site(settings: Settings, clock: Clock) -> AsyncIterator[Any]:
    backend = ScriptedBackend("one", "two")
    audit = MemoryAudit()
    roost = await build(settings, backend=backend, audit=audit, clock=clock)
    web = WebChannel(roost.core.handle, roost.command_list, "tok-0123456789", "127.0.0.1", 0)
    await web.start()
    headers = {"Authorization": "Bearer tok-0123456789"}
    async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}", headers=headers) as http:
        yield http, backend, audit
    await web.stop()
    await roost.aclose()


async def test_the_web_api_takes_an_optional_quote(site: Any) -> None:
    http, backend, audit = site
    body = {"text": "and the return?", "chat": "trip", "quote": "Outbound: Mon 06:40"}
    async with http.post("/api/chat", json=body) as r:
        assert r.status == 200 and (await r.json())["reply"] == "one"
    assert asked(backend) == "(replying to:\n> Outbound: Mon 06:40)\n\nand the return?"
    async with http.post("/api/chat/stream", json={"text": "thanks"}) as r:
        assert r.status == 200
        await r.read()
    assert asked(backend) == "thanks"
    async with http.post("/api/chat", json={"text": "x", "quote": 5}) as r:
        assert r.status == 400 and "error" in await r.json()
    async with http.post("/api/chat", json={"text": "x", "quote": "q" * 20_000}) as r:
        assert r.status == 400
    received = [d for e, _, d in audit.events if e == "message.received"]
    assert [d["quoted_chars"] for d in received] == [len("Outbound: Mon 06:40"), 0]
