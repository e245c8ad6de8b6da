"""Webhook bodies that never come keep no one out of the web listener; a cut is quiet.

Through the real web server and the real WhatsApp row (as `roost serve` wires
them), over raw sockets. The webhook must read a body before it can check
Meta's signature; clients that announce one and never finish it held their
connection busy, so at the connection cap (here 8 in all and per client, the
case of every client behind one reverse proxy) every newcomer got 503: the
page, Meta's signed delivery. Now a connection whose body is being read
before it is signed gives way like an idle one. A connection the listener
cuts before its body was read ends its request quietly (no traceback), and
an unsigned webhook's 401 closes its connection (requests pipelined behind it
are never read).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from pathlib import Path
from unittest import mock

import pytest
from aiohttp import streams
from aiohttp.test_utils import make_mocked_request

from bridge.channels.whatsapp.channel import PATH
from bridge.core.config import Settings
from tests.conftest import ScriptedBackend
from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.waits import shut, until
from tests.whatsapp.conftest import ALICE, Running, running, wa_settings
from tests.whatsapp.test_webhook_flood import slow_post, status_of

CAP = 8  # connections in all and per client: one address (a proxy) fills it


def capped(home: Path, fake: FakeWhatsApp) -> Settings:
    settings = wa_settings(home, fake)
    web = settings.web.model_copy(
        update={"max_connections": CAP, "max_connections_per_client": CAP}
    )
    return settings.model_copy(update={"web": web})


def reading(r: Running, size: int) -> bool:
    return r.channel.reading == size


async def healthz(port: int) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
        )
        return (await status_of(reader))[0]
    finally:
        await shut(writer)


async def test_bodies_that_never_come_give_way_to_the_page_and_to_meta(
    home: Path, fake: FakeWhatsApp, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with running(capped(home, fake), fake, ScriptedBackend("still here")) as r:
        held = []
        try:
            for _ in range(CAP):  # every seat: a body of 1000 announced, 10 bytes sent
                held.append(await slow_post(r.web_port, 1000, 10))
                await until(functools.partial(reading, r, len(held) * 10), "bodies being read")
            assert await healthz(r.web_port) == 200
            await fake.text(ALICE, "are you there?")  # Meta's signed delivery
            await r.channel.idle()
            assert fake.texts(ALICE) == ["still here"]
            for _ in range(CAP):  # and again, while the flood goes on: never a 503
                held.append(await slow_post(r.web_port, 1000, 10))
                assert await healthz(r.web_port) == 200
        finally:
            for _, writer in held:
                await shut(writer)
        await until(lambda: r.channel.reading == 0, "every body given back")
    errors = [rec.getMessage() for rec in caplog.records if rec.levelno >= logging.ERROR]
    assert errors == []
    assert not any("503" in rec.getMessage() for rec in caplog.records)


async def test_a_request_cut_before_its_body_was_read_is_quiet(
    home: Path, fake: FakeWhatsApp
) -> None:
    """The listener cut the connection after aiohttp parsed the head, before the handler
    read a byte: aiohttp's read then raises RuntimeError("Connection closed."), which
    was an unhandled traceback per request in a flood."""
    async with running(wa_settings(home, fake), fake, ScriptedBackend("never")) as r:
        gone = mock.Mock(connected=False, transport=None)  # connection_lost has run
        body = streams.StreamReader(gone, 1 << 16, loop=asyncio.get_running_loop())
        request = make_mocked_request(
            "POST",
            PATH,
            headers={"Content-Length": "1000"},
            payload=body,
            protocol=gone,
            transport=None,
        )
        assert request.transport is None
        response = await r.channel._webhook(request)
        assert response.status == 400
        assert r.channel.reading == 0 and fake.sent == []


async def test_an_unsigned_webhook_closes_its_connection(home: Path, fake: FakeWhatsApp) -> None:
    """Pipelined unsigned posts: the first 401 ends the connection, the rest are never read
    (a client that never reads its answers had the server answer thousands per socket)."""
    async with running(wa_settings(home, fake), fake, ScriptedBackend("never")) as r:
        reader, writer = await asyncio.open_connection("127.0.0.1", r.web_port)
        try:
            one = (
                f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{r.web_port}\r\n"
                'Content-Length: 20\r\n\r\n{"object":"x","a":1}'
            ).encode()
            last = one.replace(b"Content-Length", b"Connection: close\r\nContent-Length")
            writer.write(one * 3 + last)  # the last one ends the connection either way
            await writer.drain()
            async with asyncio.timeout(20.0):
                answers = (await reader.read()).count(b"HTTP/1.1 ")
        finally:
            await shut(writer)
        assert answers == 1
