"""A lone surrogate in an update is answered like any message, and kept in the history.

A JSON `"\\ud800"` escape makes a lone surrogate (U+D800-U+DFFF): no valid
Unicode, so no database can store it. Telegram hands on what a client sent,
so a message's text, a quote and a person's first name may hold one. The
update comes through the real channel (the fake Bot API's `getUpdates`, and
roost's own webhook route with its secret) into a roost wired as the daemon
wires it (durable inbox and outbox): the person gets the model's answer, not
"Something went wrong", and the message is in the session's history and in
recall with each lone surrogate shown as U+FFFD; the next message is answered
too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import aiohttp
import pytest

from bridge.channels.web.channel import WebChannel
from bridge.core.sessions import SessionKey
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, Running, running, tg_settings
from tests.telegram.durable import durable
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import HANG_S

SECRET = "s3cret_webhook-token"
HEADERS = {"X-Telegram-Bot-Api-Secret-Token": SECRET, "Content-Type": "application/json"}
TEXT = "tell me about the kumquat \ud800 please"
NAME = "Al\udfffice"
RECALLED = "SELECT role, name, text FROM recall_messages ORDER BY id"


def poisoned(fake: FakeBotAPI, update_id: int) -> dict[str, object]:
    message = fake.message(ALICE, TEXT, message_id=700 + update_id)
    message["from"]["first_name"] = NAME  # type: ignore[index]
    message["chat"]["first_name"] = NAME  # type: ignore[index]
    message["reply_to_message"] = {
        "message_id": 41,
        "date": int(time.time()) - 60,
        "chat": message["chat"],
        "from": {"id": ALICE, "is_bot": False, "first_name": NAME},
        "text": "an earlier \udc00 line",
    }
    return {"update_id": update_id, "message": message}


async def kept(run: Running, caplog: pytest.LogCaptureFixture) -> None:
    roost = run.roost
    key = SessionKey("alice", "telegram", str(ALICE))
    history = (await roost.sessions.load(key, time.time())).history
    users = [m.content for m in history if m.role == "user"]
    assert len(users) == 2
    assert users[0].endswith("tell me about the kumquat \ufffd please")
    assert "an earlier \ufffd line" in users[0]
    assert users[1] == "and the fig?"
    assert [m.content for m in history if m.role == "assistant"] == ["kumquats", "figs"]
    for message in history:
        message.content.encode("utf-8")  # stored: valid Unicode
    async with asyncio.timeout(HANG_S):  # recall writes after the reply
        while len(rows := await roost.database.fetch_all(RECALLED)) < 4:
            await asyncio.sleep(0.02)
    assert [tuple(r) for r in rows] == [
        ("user", "Al\ufffdice", users[0]),
        ("assistant", "", "kumquats"),
        ("user", f"user{ALICE}", "and the fig?"),
        ("assistant", "", "figs"),
    ]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [
        r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR
    ]


@pytest.mark.parametrize("inbox", [True, False], ids=["durable-inbox", "no-inbox"])
async def test_polled_update_with_lone_surrogates_is_answered_and_kept(
    home: Path, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture, inbox: bool
) -> None:
    caplog.set_level(logging.WARNING)
    backend = ScriptedBackend("kumquats", "figs")
    settings = tg_settings(home, fake)
    harness = durable(settings, fake, backend) if inbox else running(settings, fake, backend)
    async with harness as run:
        fake.push({"message": poisoned(fake, 1)["message"]})
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 1)
        fake.push_text(ALICE, "and the fig?")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 2)
        assert [s.text for s in fake.sent_to(ALICE)] == ["kumquats", "figs"]
        asked = backend.requests[0].messages[-1].content
        assert "kumquat \ufffd please" in asked and "\ud800" not in asked
        await kept(run, caplog)


async def test_webhook_update_with_lone_surrogates_is_answered_and_kept(
    home: Path, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    settings = tg_settings(
        home, fake, mode="webhook", webhook_url="https://x.example/hook", webhook_secret=SECRET
    )
    backend = ScriptedBackend("kumquats", "figs")
    web = WebChannel(lambda i, d: None, list, "web-token", "127.0.0.1", 0)  # type: ignore[arg-type,return-value]
    async with durable(settings, fake, backend, web_app=web.app) as run:
        await web.start()
        try:
            url = f"http://127.0.0.1:{web.port}/hook"
            async with aiohttp.ClientSession() as http:
                body = json.dumps(poisoned(fake, 1))  # the surrogates as `\ud800` escapes
                assert "\\ud800" in body and "\\udfff" in body
                async with http.post(url, data=body, headers=HEADERS) as resp:
                    assert resp.status == 200
                await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 1)
                follow = {"update_id": 2, "message": fake.message(ALICE, "and the fig?")}
                async with http.post(url, json=follow, headers=HEADERS) as resp:
                    assert resp.status == 200
                await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 2)
            assert [s.text for s in fake.sent_to(ALICE)] == ["kumquats", "figs"]
            await kept(run, caplog)
        finally:
            await web.stop()
