"""The web channel's real aiohttp server under slow and greedy clients, in process.

Raw sockets on 127.0.0.1 play the attacker: a head sent a byte at a time, a
body that stops half way, more connections than the caps allow, more event
streams than a token may hold. Each wait is for the server's own reaction
(the socket closed, a response read), with generous upper bounds only to stop
a hang. Also here: a reload that drops a tenant's token ends its open
streams, and a full disk answers 507 on the history of a new chat.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
import pytest

from bridge.app.build import Roost, build
from bridge.channels.web.channel import WebChannel
from bridge.channels.web.conns import UNBUDGETED, ConnLimits
from bridge.core.config import Settings
from bridge.core.diskfull import DISK_FULL
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Final, Inbound
from tests.conftest import Clock, ScriptedBackend
from tests.waits import shut

TOKEN = "test-token-0123456789"
BOB = "bob-page-token-0123456789"
WAIT_S = 60.0  # a safety net against a hang, never a speed check
LIMITS = replace(
    UNBUDGETED,
    header_timeout_s=1.0,
    body_idle_s=1.0,
    body_timeout_s=30.0,
    streams_per_token=3,
    streams_per_tenant=4,
)


@dataclass
class Site:
    web: WebChannel
    roost: Roost
    port: int

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


async def make_site(settings: Settings, clock: Clock, limits: ConnLimits) -> Site:
    roost = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    web = WebChannel(
        roost.core.handle,
        roost.command_list,
        TOKEN,
        "127.0.0.1",
        0,
        tenant_tokens={BOB: "bob"},
        archive=roost.sessions.archive,
        turns=roost.core.running,
        limits=limits,
    )
    await web.start()
    return Site(web, roost, web.port)


@pytest.fixture
async def site(settings: Settings, clock: Clock) -> AsyncIterator[Site]:
    made = await make_site(settings, clock, LIMITS)
    yield made
    await made.web.stop()
    await made.roost.aclose()


async def closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection."""
    async with asyncio.timeout(WAIT_S):
        return await reader.read()


async def healthz(port: int) -> int:
    async with asyncio.timeout(WAIT_S):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        status = int((await reader.readline()).split()[1])
        await shut(writer)
        return status


async def test_a_head_sent_slowly_is_dropped_at_the_header_timeout(site: Site) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
    writer.write(b"GET /healthz HTTP/1.1\r\n")
    await writer.drain()
    dripping = asyncio.create_task(drip(writer, b"X-Slow: " + b"a" * 10_000))
    try:
        assert await closed_by_server(reader) == b""  # closed, nothing answered
    finally:
        dripping.cancel()
        await shut(writer)
    assert await healthz(site.port) == 200


async def drip(writer: asyncio.StreamWriter, data: bytes) -> None:
    """One byte at a time, forever slower than any real client."""
    for byte in data:
        writer.write(bytes([byte]))
        await asyncio.sleep(0.2)


async def test_a_connection_that_never_speaks_is_dropped(site: Site) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
    assert await closed_by_server(reader) == b""
    await shut(writer)


async def test_a_body_that_stalls_is_dropped(site: Site) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
    head = (
        f"POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1:{site.port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n"
    )
    writer.write(head.encode() + b'{"text": "hel')
    await writer.drain()
    await closed_by_server(reader)
    await shut(writer)
    assert site.web.guard.table.timed_out == 1


async def test_a_flood_of_idle_sockets_never_keeps_healthz_out(
    settings: Settings, clock: Clock
) -> None:
    limits = replace(LIMITS, max_total=20, per_client=20, header_timeout_s=600.0)
    made = await make_site(settings, clock, limits)
    socks = []
    try:
        for _ in range(200):  # ten times the cap, heads never finished
            reader, writer = await asyncio.open_connection("127.0.0.1", made.port)
            writer.write(b"GET / HTTP/1.1\r\n")
            socks.append((reader, writer))
        for _ in range(5):
            assert await healthz(made.port) == 200
        table = made.web.guard.table
        assert table.total <= 20 and table.evicted >= 180
        for reader, _ in socks[:150]:
            assert await closed_by_server(reader) == b""  # pushed out for the newer ones
    finally:
        for _, writer in socks:
            await shut(writer)
        await made.web.stop()
        await made.roost.aclose()


def refused_raw(port: int) -> bytes:
    """Connect and read what the server says without sending anything (blocking)."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
        return b"".join(chunks)


async def test_when_every_connection_is_busy_a_new_one_gets_503(
    settings: Settings, clock: Clock
) -> None:
    limits = replace(LIMITS, max_total=2, per_client=5, streams_per_token=5, streams_per_tenant=5)
    made = await make_site(settings, clock, limits)
    try:
        async with aiohttp.ClientSession() as http:
            streams = [
                await http.get(made.url("/api/events?chat=c"), headers=auth(TOKEN))
                for _ in range(2)
            ]
            for stream in streams:
                assert (await stream.content.readline()).startswith(b"event: ready")
            said = await asyncio.to_thread(refused_raw, made.port)
            assert said.startswith(b"HTTP/1.1 503") and b"too many open connections" in said
            assert made.web.guard.table.refused["total"] == 1
            for stream in streams:
                stream.close()
    finally:
        await made.web.stop()
        await made.roost.aclose()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_event_streams_are_capped_per_token_and_per_tenant(site: Site) -> None:
    async with aiohttp.ClientSession() as http:
        opened: list[Any] = []
        for _ in range(3):
            opened.append(await http.get(site.url("/api/events?chat=c"), headers=auth(TOKEN)))
            assert opened[-1].status == 200
        refused = await http.get(site.url("/api/events?chat=c"), headers=auth(TOKEN))
        assert refused.status == 429 and "event streams" in (await refused.json())["error"]
        attach = await http.get(site.url("/api/chat/attach?chat=c"), headers=auth(TOKEN))
        assert attach.status == 429  # the same cap: every stream of the token counts
        bob = await http.get(site.url("/api/events?chat=c"), headers=auth(BOB))
        assert bob.status == 200  # another tenant's token has its own
        opened[0].close()
        async with asyncio.timeout(WAIT_S):
            while site.web.streams.count("local") == 3:
                await asyncio.sleep(0.01)
        again = await http.get(site.url("/api/events?chat=c"), headers=auth(TOKEN))
        assert again.status == 200
        for response in [*opened, bob, again]:
            response.close()


async def test_a_reload_that_removes_a_tenant_ends_its_open_streams(site: Site) -> None:
    async with aiohttp.ClientSession() as http:
        bob = await http.get(site.url("/api/events?chat=c"), headers=auth(BOB))
        local = await http.get(site.url("/api/events?chat=c"), headers=auth(TOKEN))
        for stream in (bob, local):
            assert (await stream.content.readline()).startswith(b"event: ready")
        site.web.set_tenant_tokens({})  # bob's [tenants.bob] is gone
        async with asyncio.timeout(WAIT_S):
            rest = await bob.content.read()
        assert b"event: message" not in rest
        assert site.web.streams.count("bob") == 0 and site.web.streams.count("local") == 1
        assert not local.content.at_eof()
        refused = await http.get(site.url("/api/events?chat=c"), headers=auth(BOB))
        assert refused.status == 401
        local.close()


async def fill(db: Database) -> str:
    """Make the database as full as a full disk would, for the first row of a new web
    chat: rows of just that shape are added until one fails (SQLITE_FULL); the chat id
    of the one that failed is returned (its conversation cannot be made either). The
    page cap is the `Database` writer's (the session store's connection)."""
    pages = await db.fetch_value("PRAGMA page_count")
    await db.execute(f"PRAGMA max_page_count = {pages}")
    for n in range(1_000_000):
        chat = f"brand-new-{n:07d}"
        try:
            await db.execute(
                "INSERT INTO conversations (tenant, channel, chat, started_at, updated_at)"
                " VALUES ('local', 'web', ?, 0, 0)",
                (chat,),
            )
        except StorageError as exc:
            assert "full" in str(exc)
            return chat
    raise AssertionError("the database never filled up")


async def test_the_history_of_a_new_chat_on_a_full_disk_is_507(site: Site) -> None:
    db = site.roost.database
    chat = await fill(db)
    async with aiohttp.ClientSession() as http:
        for path in (f"/api/history?chat={chat}", f"/api/conversations?chat={chat}"):
            response = await http.get(site.url(path), headers=auth(TOKEN))
            assert response.status == 507, path
            assert (await response.json())["error"] == DISK_FULL
    await db.execute("PRAGMA max_page_count = 1073741823")
    async with aiohttp.ClientSession() as http:
        response = await http.get(site.url(f"/api/history?chat={chat}"), headers=auth(TOKEN))
        assert response.status == 200


async def test_a_new_chat_refused_for_a_full_disk_is_507(settings: Settings) -> None:
    async def handle(inbound: Inbound, on_delta: object, on_progress: object) -> Final:
        assert inbound.text == "/reset"
        return Final(DISK_FULL, "error")  # what the core answers when the archive is full

    web = WebChannel(handle, list, TOKEN, "127.0.0.1", 0)
    await web.start()
    try:
        async with aiohttp.ClientSession() as http:
            response = await http.post(
                f"http://127.0.0.1:{web.port}/api/chat/new", json={"chat": "c"}, headers=auth(TOKEN)
            )
            assert response.status == 507
            assert (await response.json())["error"] == DISK_FULL
    finally:
        await web.stop()
