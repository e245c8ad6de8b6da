"""The web channel under hostile input: forged Host headers and malformed bodies.

aiohttp's real server on 127.0.0.1. A DNS-rebinding page reaches roost with
its own name in `Host`; every route must refuse it (421) before doing any
work. Any malformed body gets a 4xx JSON error and never reaches the model.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from bridge.app.build import build
from bridge.channels.web.channel import WebChannel
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, ScriptedBackend
from tests.waits import HANG_S, shut

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXTRA = ["roost.lan", "chat.example.org:443"]


@pytest.fixture
async def site(settings: Settings, clock: Clock) -> AsyncIterator[Any]:
    backend = ScriptedBackend()
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    web = WebChannel(
        roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0, allowed_hosts=EXTRA
    )
    await web.start()
    async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as http:
        yield http, roost, web.port
    await web.stop()
    await roost.aclose()


ROUTES = [
    ("GET", "/", {}),
    ("GET", "/static/app.js", {}),
    ("GET", "/healthz", {}),
    ("GET", "/api/commands", AUTH),
    ("POST", "/api/chat", AUTH),
    ("POST", "/api/chat/stream", AUTH),
    ("GET", "/no-such-route", {}),
]


def forged_hosts(port: int) -> list[str]:
    return [
        f"evil.example:{port}",
        "evil.example",
        f"localhost.evil.example:{port}",
        f"127.0.0.1.nip.io:{port}",
        f"127.0.0.1:{port + 1}",
        f"localhost:{port}.evil.example",
        f"localhost.:{port}",
        f"roost.lan.evil.example:{port}",
        "chat.example.org",
        f"chat.example.org:{port}",
        f"[::ffff:7f00:1]:{port}",
        f"127.1:{port}",
        f"evil.example:{port}@127.0.0.1",
        "",
    ]


@pytest.mark.parametrize(("method", "path", "headers"), ROUTES)
async def test_a_forged_host_is_refused_on_every_route(
    site: Any, method: str, path: str, headers: dict[str, str]
) -> None:
    http, roost, port = site
    for host in forged_hosts(port):
        async with http.request(
            method, path, json={"text": "hi"}, headers={**headers, "Host": host}
        ) as r:
            assert r.status == 421, (host, r.status)
            body = await r.json()
            assert "allowed_hosts" in body["error"]
            assert "<script" not in await r.text()
    assert roost.backend.requests == []


async def test_a_request_without_host_is_refused(site: Any) -> None:
    _, _, port = site
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.0\r\n\r\n")
    await writer.drain()
    head = await asyncio.wait_for(reader.read(200), HANG_S)
    await shut(writer)
    assert head.startswith(b"HTTP/1.0 421") or head.startswith(b"HTTP/1.1 421"), head


async def test_loopback_and_configured_names_are_served(site: Any) -> None:
    http, _, port = site
    allowed = [
        f"127.0.0.1:{port}",
        f"localhost:{port}",
        f"LOCALHOST:{port}",
        f"[::1]:{port}",
        f"roost.lan:{port}",
        "roost.lan",
        "chat.example.org:443",
    ]
    for host in allowed:
        async with http.get("/healthz", headers={"Host": host}) as r:
            assert r.status == 200, host
        async with http.post(
            "/api/chat", json={"text": "/whoami"}, headers={**AUTH, "Host": host}
        ) as r:
            assert r.status == 200, host


DEEP = 100_000
MALFORMED = [
    b"",
    b"not json",
    b"[]",
    b"null",
    b'"hello"',
    b"42",
    b'{"text": ["a"]}',
    b'{"text": {"a": 1}}',
    b'{"text": null}',
    b'{"text": true}',
    b'{"text": NaN}',
    b'{"text": "hi", "chat": 5}',
    b'{"text": "hi", "extra": 1}',
    b'{"text": 1' + b"0" * 5000 + b"}",
    b"[" * DEEP + b"]" * DEEP,
    b"{" + b'"a":{' * DEEP + b"}" * DEEP,
    b'{"text": "x", "chat": ' + b"[" * DEEP + b"]" * DEEP + b"}",
    b'{"text": "caf\xe9"}',
    b'{"text": "\xff\xfe\xfd"}',
    '{"text": "hi"}'.encode("utf-16"),
    b'{"text": "\\ud800"}',
    b'{"text": "ok \\udfff end"}',
    b'\xef\xbb\xbf{"text": "bom"}' + b"\x00",
    b'{"text": "hi"} trailing',
]


@pytest.mark.parametrize("path", ["/api/chat", "/api/chat/stream"])
async def test_malformed_bodies_get_a_json_400_never_500(site: Any, path: str) -> None:
    http, roost, _ = site
    for body in MALFORMED:
        async with http.post(path, data=body, headers=AUTH) as r:
            assert r.status == 400, (body[:40], r.status, await r.text())
            assert r.content_type == "application/json"
            error = (await r.json())["error"]
            assert '{"text": "hello"}' in error
    assert roost.backend.requests == []


async def test_oversize_body_is_a_json_413(site: Any) -> None:
    http, roost, _ = site
    big = io.BytesIO(b'{"text": "' + b"x" * (2 * 1024 * 1024) + b'"}')
    async with http.post("/api/chat", data=big, headers=AUTH) as r:
        assert r.status == 413
        assert r.content_type == "application/json"
        assert "too large" in (await r.json())["error"]
    assert roost.backend.requests == []


async def test_a_good_body_still_works(site: Any) -> None:
    http, roost, _ = site
    async with http.post("/api/chat", data=b'{"text": "hi \\u00e9"}', headers=AUTH) as r:
        assert r.status == 200
        assert (await r.json())["kind"] == "answer"
    assert roost.backend.requests[0].messages[-1].content == "hi é"


def test_allowed_hosts_setting(home: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from bridge.app.serve import web_hosts
    from bridge.core.config import ConfigError, load_settings

    monkeypatch.setenv("ROOST_WEB__ALLOWED_HOSTS", '["Roost.LAN", "[fd00::1]:8443"]')
    monkeypatch.setenv("ROOST_TELEGRAM__TOKEN", "123:abc")
    monkeypatch.setenv("ROOST_TELEGRAM__MODE", "webhook")
    monkeypatch.setenv("ROOST_TELEGRAM__WEBHOOK_URL", "https://bot.example.org/tg/hook")
    settings = load_settings()
    assert web_hosts(settings) == ["roost.lan", "[fd00::1]:8443", "bot.example.org"]
    for bad in ('["evil.example/x"]', '["a b"]', '["host:port"]', '["*"]'):
        monkeypatch.setenv("ROOST_WEB__ALLOWED_HOSTS", bad)
        with pytest.raises(ConfigError, match="allowed_hosts"):
            load_settings()
