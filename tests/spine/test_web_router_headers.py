"""The router's own answers carry the security headers, and no answer names versions.

An unknown path (404), a wrong method (405) and a missing static file are
answered by aiohttp's router, not a route: before, they had none of the
security headers (`Cache-Control: no-store`, `nosniff`, the CSP, framing),
and every answer said `Server: Python/3.11 aiohttp/3.x`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from bridge.channels.web.channel import SECURITY_HEADERS, WebChannel
from bridge.types.messages import Final, Inbound

TOKEN = "web-token-0123456789"


async def answer(inbound: Inbound, on_delta: object, on_progress: object) -> Final:
    return Final("ok", "answer")


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    web = WebChannel(answer, list, TOKEN, "127.0.0.1", 0)
    await web.start()
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as session:
            yield session
    finally:
        await web.stop()


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/no/such/page", 404),
        ("GET", "/static/missing.js", 404),
        ("DELETE", "/api/chat", 405),
        ("GET", "/healthz", 200),
        ("GET", "/api/commands", 401),
    ],
)
async def test_every_answer_has_the_security_headers_and_no_versions(
    http: aiohttp.ClientSession, method: str, path: str, status: int
) -> None:
    async with http.request(method, path) as r:
        assert r.status == status
        for key, value in SECURITY_HEADERS.items():
            assert r.headers.get(key) == value, (path, key)
        assert r.headers.get("Server") == "roost"
