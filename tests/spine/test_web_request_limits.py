"""What the web listener takes of a request before any route runs (attacker pass 34).

aiohttp's real server on 127.0.0.1, through the web channel and its guarded
site. A body sent with `Content-Encoding` is refused (415) before any route,
one another channel added too (the Telegram and WhatsApp webhooks), reads a
byte of it: aiohttp used to inflate such bodies before any authentication,
and for 10 s more after the answer. A request head is capped at `HEAD_MAX`
bytes in all and `MAX_HEADERS` lines (a half-sent head at aiohttp's own
limits held ~2 MiB of memory each); a browser's head, a large cookie
included, still passes. aiohttp's own answer to an unparseable request says
`Server: roost` and quotes nothing of the request.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from bridge.app.build import build
from bridge.channels.web.channel import WebChannel
from bridge.channels.web.request_limits import HEAD_MAX, MAX_HEADERS
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, ScriptedBackend
from tests.waits import HANG_S, shut

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HOOK = "/telegram/webhook"  # a route another channel adds, as the Telegram webhook


@dataclass
class Listener:
    http: aiohttp.ClientSession
    port: int
    hook_bodies: list[bytes] = field(default_factory=list)  # what the added route read

    async def raw(self, data: bytes) -> bytes:
        """Send `data` on a fresh connection and read until the server closes it."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            writer.write(data)
            await writer.drain()
            return await asyncio.wait_for(reader.read(), HANG_S)
        finally:
            await shut(writer)

    def host(self) -> bytes:
        return f"Host: 127.0.0.1:{self.port}\r\n".encode()


@pytest.fixture
async def listener(settings: Settings, clock: Clock) -> AsyncIterator[Listener]:
    roost = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    web_channel = WebChannel(roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0)
    bodies: list[bytes] = []

    async def hook(request: web.Request) -> web.Response:
        body = await request.read()
        bodies.append(body)
        return web.json_response({"read": len(body)})

    web_channel.app.router.add_post(HOOK, hook)
    await web_channel.start()
    async with aiohttp.ClientSession(f"http://127.0.0.1:{web_channel.port}") as http:
        yield Listener(http, web_channel.port, bodies)
    await web_channel.stop()
    await roost.aclose()


BODY = json.dumps({"text": "hello", "update_id": 1}).encode()
CODED = [
    ("gzip", gzip.compress(BODY)),
    ("deflate", zlib.compress(BODY)),
    ("br", b"\x8b\x02\x80hello\x03"),
    ("GZIP, identity", gzip.compress(BODY)),
]
ROUTES = [
    ("/healthz", {}),  # no POST route: a 405 before
    ("/api/chat", AUTH),
    ("/api/chat", {}),  # no token: a 401 before
    (HOOK, {}),  # another channel's route: it read the body before
    ("/no-such-route", {}),
]


@pytest.mark.parametrize(("path", "headers"), ROUTES)
async def test_a_coded_body_is_refused_before_any_route_reads_it(
    listener: Listener, path: str, headers: dict[str, str]
) -> None:
    for coding, body in CODED:
        async with listener.http.post(
            path, data=body, headers={**headers, "Content-Encoding": coding}
        ) as got:
            assert got.status == 415, (path, coding)
            assert got.headers["Accept-Encoding"] == "identity"
            assert got.headers["Server"] == "roost"
            assert got.headers["X-Content-Type-Options"] == "nosniff"
            error = (await got.json())["error"]
            assert "uncompressed" in error and "Content-Encoding" in error
    assert listener.hook_bodies == []


async def test_an_uncoded_body_still_reaches_the_route(listener: Listener) -> None:
    for headers in ({}, {"Content-Encoding": "identity"}):
        async with listener.http.post(HOOK, data=BODY, headers=headers) as got:
            assert got.status == 200
            assert await got.json() == {"read": len(BODY)}
    assert listener.hook_bodies == [BODY, BODY]


def head(listener: Listener, lines: list[bytes], method: bytes = b"GET /healthz") -> bytes:
    return method + b" HTTP/1.1\r\n" + listener.host() + b"".join(lines)


async def test_a_head_past_the_cap_is_refused_before_it_ends(listener: Listener) -> None:
    """Under aiohttp's line and count limits, over the cap in all, never finished: a
    431 and the connection closed at once, not held until the header timeout."""
    lines = [f"X-Pad-{i}: {'a' * 7000}\r\n".encode() for i in range(HEAD_MAX // 7000 + 1)]
    got = await listener.raw(head(listener, lines))  # no blank line: the head never ends
    status, _, body = got.partition(b"\r\n\r\n")
    assert status.split(b" ")[1] == b"431", got[:200]
    assert b"Server: roost" in status
    assert json.loads(body) == {
        "error": f"the request head (its line and headers) is larger than {HEAD_MAX // 1024} KiB"
    }
    assert b"aaaa" not in got


async def test_too_many_header_lines_are_refused(listener: Listener) -> None:
    lines = [f"X-N{i}: 1\r\n".encode() for i in range(MAX_HEADERS + 1)]
    got = await listener.raw(head(listener, lines) + b"\r\n")
    status, _, body = got.partition(b"\r\n\r\n")
    assert status.split(b" ")[1] == b"431", got[:200]
    assert json.loads(body) == {"error": "the request head has more than 64 header lines"}
    assert b"X-N" not in got


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /?q=" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",  # a long URL
        b"GET / HTTP/1.1\r\nHost: x\r\nCookie: " + b"a" * 9000 + b"\r\n\r\n",  # a header
        b"GET / HTTP/1.1\r\nHost: x\r\nX-" + b"a" * 9000 + b": 1\r\n\r\n",  # its name
    ],
)
async def test_a_head_line_over_the_limit_is_refused_naming_it(
    listener: Listener, request_bytes: bytes
) -> None:
    """A newcomer's 9,000-byte cookie got "could not read this request as HTTP" (s35
    N5): a line over the limit is a 431 that says which limit, quoting nothing."""
    got = await listener.raw(request_bytes)
    status, _, body = got.partition(b"\r\n\r\n")
    assert status.split(b" ")[1] == b"431", got[:200]
    assert b"Server: roost" in status and b"aaaa" not in got
    assert json.loads(body) == {
        "error": "a line of the request head (the URL, or one header) is longer than 8,190 bytes"
    }


async def test_a_browser_head_with_a_large_cookie_passes(listener: Listener) -> None:
    """What a browser behind a CDN sends: ~35 headers, an 8 KB cookie of other sites
    on the same host name, a long referer."""
    headers = {
        "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0 Safari",
        "Accept": "application/json, text/plain, */*",
        "Accept-Language": "en-GB,en;q=0.9,de;q=0.8",
        "Cookie": "; ".join(f"c{i}={'v' * 90}" for i in range(80)),  # ~7.8 KB
        "Referer": "http://127.0.0.1/?" + "q" * 2000,
        **{f"Sec-Ch-Ua-X{i}": '"Chromium";v="131", "Not_A Brand";v="24"' for i in range(12)},
        **{f"X-Forwarded-X{i}": "203.0.113.7, 198.51.100.2" for i in range(12)},
    }
    async with listener.http.get("/healthz", headers=headers) as got:
        assert got.status == 200
    async with listener.http.get("/api/commands", headers={**headers, **AUTH}) as got:
        assert got.status == 200


async def test_a_large_body_is_no_head(listener: Listener) -> None:
    """A body many times the head cap, sent in one write with its head and a second
    request pipelined behind it, counts as body: both are answered."""
    body = b"x" * (8 * HEAD_MAX)
    one = head(
        listener, [f"Content-Length: {len(body)}\r\n\r\n".encode()], b"POST " + HOOK.encode()
    )
    two = head(listener, [b"Connection: close\r\n\r\n"])
    got = await listener.raw(one + body + two)
    assert got.startswith(b"HTTP/1.1 200 "), got[:200]
    assert b'{"read": %d}' % len(body) in got
    assert got.count(b"HTTP/1.1 200 ") == 2
    assert listener.hook_bodies == [body]


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"G\x01T / HTTP/1.1\r\nX-Secret: aaaa\r\n\r\n",  # no method
        b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\naaaa",
    ],
)
async def test_aiohttp_own_errors_say_roost_and_quote_nothing(
    listener: Listener, request_bytes: bytes
) -> None:
    got = await listener.raw(request_bytes)
    status, _, body = got.partition(b"\r\n\r\n")
    assert b" 400 " in status.split(b"\r\n")[0], got[:200]
    assert b"Server: roost" in status
    assert b"aiohttp" not in got and b"Python" not in got
    assert b"aaaa" not in got
    assert json.loads(body) == {"error": "roost could not read this request as HTTP"}


def test_the_unit_bounds_the_daemons_memory() -> None:
    """Whatever gets past the caps, the service's cgroup stops it before the host's
    OOM killer picks a victim: reclaim first (MemoryHigh), then roost alone (MemoryMax)."""
    unit = Path(__file__).resolve().parents[2] / "systemd" / "roost.service"
    settings = dict(
        line.split("=", 1) for line in unit.read_text().splitlines() if line.startswith("Memory")
    )
    sizes = {
        key: _bytes(value) for key, value in settings.items() if key != "MemoryDenyWriteExecute"
    }
    assert set(sizes) == {"MemoryHigh", "MemoryMax"}
    assert 512 << 20 <= sizes["MemoryHigh"] < sizes["MemoryMax"]


def _bytes(value: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(value[:-1]) * units[value[-1]] if value[-1] in units else int(value)


async def test_a_head_that_begins_in_the_read_ending_a_body_counts_from_its_start(
    listener: Listener,
) -> None:
    """The attacker's slip: a body's last bytes and a long head that never ends, in one
    write after the first answer was read. The bytes after the body are head: past the
    cap it is a 431, not a head held until the header timeout."""
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        first = head(listener, [b"Content-Length: 10\r\n\r\n"], b"POST /healthz")
        writer.write(first + b"12345")  # answered (405) before its body is all there
        await writer.drain()
        answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANG_S)
        assert answer.startswith(b"HTTP/1.1 405 "), answer
        lines = [f"X-Pad-{i}: {'a' * 4000}\r\n".encode() for i in range(10)]  # one read
        writer.write(b"67890" + head(listener, lines))  # no blank line: never ends
        await writer.drain()
        got = await asyncio.wait_for(reader.read(), HANG_S)
    finally:
        await shut(writer)
    assert b" 431 Request Header Fields Too Large" in got, got[-300:]
