"""An access token with bytes that are not UTF-8 is a wrong token: 401, no 500, no traceback.

aiohttp hands a header's non-UTF-8 bytes over as lone surrogates; before, the
gate encoded them strictly, and every `/api/*` route answered 500 and logged
a traceback (install paths, line numbers) for `Authorization: Bearer \\xff`.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from bridge.channels.web.channel import WebChannel
from bridge.types.messages import Final, Inbound
from tests.waits import HANG_S, shut

TOKEN = "web-token-0123456789"
ROUTES = [
    ("GET", "/api/commands"),
    ("POST", "/api/chat"),
    ("POST", "/api/chat/stream"),
    ("POST", "/api/chat/stop"),
    ("GET", "/api/chat/attach?chat=c"),
    ("GET", "/api/events?chat=c"),
    ("GET", "/api/outbox?chat=c"),
    ("GET", "/metrics"),
]


async def answer(inbound: Inbound, on_delta: object, on_progress: object) -> Final:
    return Final("never asked", "answer")


async def status(port: int, method: str, path: str, token: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            "Content-Type: application/json\r\nContent-Length: 2\r\n".encode()
            + b"Authorization: Bearer "
            + token
            + b"\r\n\r\n{}"
        )
        return (await asyncio.wait_for(reader.readline(), HANG_S)).strip()
    finally:
        await shut(writer)


@pytest.mark.parametrize("token", [b"\xff", TOKEN.encode() + b"\xff", b"\xed\xa0\x80abc"])
async def test_a_token_that_is_not_utf8_is_401_on_every_api_route(
    token: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    web = WebChannel(answer, list, TOKEN, "127.0.0.1", 0, metrics=lambda: "")
    await web.start()
    try:
        for method, path in ROUTES:
            said = await status(web.port, method, path, token)
            assert said == b"HTTP/1.1 401 Unauthorized", (path, said)
    finally:
        await web.stop()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
