"""Webhook mode: a body that is no update gets 400, never a 500 with a traceback.

Telegram retries a webhook request that failed; a 500 for a body roost
cannot read would come back forever. Each body here is valid JSON (or
nearly) with the right secret header, but no update: the route answers 400
with one WARNING line and no traceback, nothing reaches the model, and a
real update after them is answered as usual.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import aiohttp
import pytest

from bridge.channels.web.channel import WebChannel
from bridge.core.config import Settings
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, running, tg_settings
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import until

SECRET = "s3cret_webhook-token"
HEADERS = {"X-Telegram-Bot-Api-Secret-Token": SECRET, "Content-Type": "application/json"}

NOT_UPDATES: dict[str, bytes] = {
    "array": b"[]",
    "string": b'"x"',
    "null": b"null",
    "number": b"5",
    "true": b"true",
    "message is a string": b'{"update_id":7,"message":"hi"}',
    "message is an array": b'{"update_id":7,"message":[1]}',
    "message lacks fields": b'{"update_id":7,"message":{}}',
    "callback is a number": b'{"update_id":7,"callback_query":5}',
    "no update_id": b'{"message":{"message_id":1}}',
    "update_id a string": b'{"update_id":"7"}',
    "update_id a bool": b'{"update_id":true}',
    "deep array": b"[" * 100_000 + b"]" * 100_000,
    "deep object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "deep inside an update": b'{"update_id":7,"x":' + b"[" * 500 + b"]" * 500 + b"}",
    "deep past the parser inside": b'{"update_id":7,"x":' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    "not JSON": b"{",
    "empty": b"",
    "not UTF-8": b'{"update_id":7,"x":"\xff"}',
}


@pytest.fixture
def hook_settings(home: Path, fake: FakeBotAPI) -> Settings:
    return tg_settings(
        home, fake, mode="webhook", webhook_url="https://x.example/hook", webhook_secret=SECRET
    )


@pytest.mark.parametrize("name", list(NOT_UPDATES))
async def test_a_body_that_is_no_update_gets_400_without_a_traceback(
    name: str, hook_settings: Settings, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    backend = ScriptedBackend("still answering")
    web = WebChannel(lambda i, d: None, list, "web-token", "127.0.0.1", 0)  # type: ignore[arg-type,return-value]
    async with running(hook_settings, fake, backend, web_app=web.app) as run:
        await web.start()
        try:
            url = f"http://127.0.0.1:{web.port}/hook"
            async with aiohttp.ClientSession() as http:
                async with http.post(url, data=NOT_UPDATES[name], headers=HEADERS) as resp:
                    assert resp.status == 400
                update = {"update_id": 8, "message": fake.message(ALICE, "a real one")}
                async with http.post(url, data=json.dumps(update), headers=HEADERS) as resp:
                    assert resp.status == 200
            call = await fake.wait_call("sendMessage")
            assert call.params["text"] == "still answering"
            await until(lambda: run.handled[0] >= 1, "the real update handled")
            assert run.handled == [1]  # the refused body never reached the bot
            assert [r.messages[-1].content for r in backend.requests] == ["a real one"]
        finally:
            await web.stop()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [
        r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR
    ]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    refused = [r for r in caplog.records if "no update was refused" in r.getMessage()]
    assert [r.levelno for r in refused] == [logging.WARNING]
