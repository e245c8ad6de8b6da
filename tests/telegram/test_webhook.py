"""Webhook mode: the update arrives over roost's own aiohttp server."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from bridge.channels.web.channel import WebChannel
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, running, tg_settings
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import until

SECRET = "s3cret_webhook-token"


async def test_webhook_needs_the_secret_token(home: Path, fake: FakeBotAPI) -> None:
    settings = tg_settings(
        home,
        fake,
        mode="webhook",
        webhook_url="https://roost.example.org/tg/hook",
        webhook_secret=SECRET,
    )
    backend = ScriptedBackend("webhook answer")
    web = WebChannel(lambda i, d: None, list, "web-token", "127.0.0.1", 0)  # type: ignore[arg-type,return-value]
    async with running(settings, fake, backend, web_app=web.app) as run:
        await web.start()
        try:
            hook = fake.calls_of("setWebhook")[0].params
            assert hook["url"] == "https://roost.example.org/tg/hook"
            assert hook["secret_token"] == SECRET
            assert not fake.calls_of("getUpdates"), "no polling in webhook mode"
            url = f"http://127.0.0.1:{web.port}/tg/hook"
            update = {"update_id": 1, "message": fake.message(ALICE, "via webhook")}
            async with aiohttp.ClientSession() as http:
                for headers in ({}, {"X-Telegram-Bot-Api-Secret-Token": "wrong"}):
                    async with http.post(url, json=update, headers=headers) as resp:
                        assert resp.status == 401
                        assert await resp.read() == b""  # refused before it was queued
                assert backend.requests == [] and fake.calls_of("sendMessage") == []
                headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
                async with http.post(url, json=update, headers=headers) as resp:
                    assert resp.status == 200
            call = await fake.wait_call("sendMessage")
            assert call.params["text"] == "webhook answer"
            await until(lambda: run.handled[0] >= 1, "the accepted update handled")
            assert run.handled == [1]  # the refused posts never reached the bot
            assert [r.messages[-1].content for r in backend.requests] == ["via webhook"]
        finally:
            await web.stop()


async def test_webhook_secret_is_generated_when_not_configured(
    home: Path, fake: FakeBotAPI
) -> None:
    settings = tg_settings(home, fake, mode="webhook", webhook_url="https://x.example/hook")
    web = WebChannel(lambda i, d: None, list, "web-token", "127.0.0.1", 0)  # type: ignore[arg-type,return-value]
    async with running(settings, fake, web_app=web.app):
        secret = fake.calls_of("setWebhook")[0].params["secret_token"]
        assert len(secret) >= 32
        await web.start()
        try:
            async with aiohttp.ClientSession() as http:
                url = f"http://127.0.0.1:{web.port}/hook"
                async with http.post(url, json={"update_id": 5}) as resp:
                    assert resp.status == 401
        finally:
            await web.stop()
