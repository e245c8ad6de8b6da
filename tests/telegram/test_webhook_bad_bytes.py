"""A secret header with bytes that are not UTF-8 is a wrong secret: 401, no 500, no traceback.

aiohttp hands such bytes over as lone surrogates; before, the comparison
encoded them strictly and the webhook answered 500 with a logged traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from bridge.channels.web.channel import WebChannel
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, running, tg_settings
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.test_webhook import SECRET
from tests.waits import HANG_S, shut


async def posted(port: int, secret: bytes, body: bytes) -> bytes:
    """The status line of a raw POST to the webhook with this secret header."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"POST /tg/hook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n".encode()
            + b"X-Telegram-Bot-Api-Secret-Token: "
            + secret
            + b"\r\n\r\n"
            + body
        )
        return (await asyncio.wait_for(reader.readline(), HANG_S)).strip()
    finally:
        await shut(writer)


async def test_a_secret_that_is_not_utf8_is_refused_like_a_wrong_one(
    home: Path, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    settings = tg_settings(
        home,
        fake,
        mode="webhook",
        webhook_url="https://roost.example.org/tg/hook",
        webhook_secret=SECRET,
    )
    backend = ScriptedBackend("webhook answer")
    web = WebChannel(lambda i, d: None, list, "web-token", "127.0.0.1", 0)  # type: ignore[arg-type]
    async with running(settings, fake, backend, web_app=web.app):
        await web.start()
        try:
            body = json.dumps({"update_id": 1, "message": fake.message(ALICE, "hi")})
            for secret in (b"\xff", SECRET.encode() + b"\xff", b"\xc3\x28" * 8):
                assert await posted(web.port, secret, body.encode()) == b"HTTP/1.1 401 Unauthorized"
            assert backend.requests == []
        finally:
            await web.stop()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
