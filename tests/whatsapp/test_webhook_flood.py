"""The webhook under a flood of unsigned bodies: memory stays bounded, Meta still gets in.

Through the real web server and the real WhatsApp row, over raw sockets (a
client that sends its headers and part of a body, then waits): the bodies
being read at once hold at most `BODY_BUDGET` bytes together (bodies not
small: all but its last MiB, `RESERVE`; one full body per client address,
so the flood below comes from five loopback addresses); a body that
would pass it is answered 503 with `Retry-After` at once (Meta delivers it
again), while a small signed delivery still fits and is answered; a body
that does not arrive within the deadline is 408 and frees its share; a
client that goes away mid-body leaves no traceback in the log.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from bridge.channels.whatsapp.budget import RESERVE
from bridge.channels.whatsapp.channel import BODY_BUDGET, MAX_BODY
from tests.conftest import ScriptedBackend
from tests.fakes import whatsapp_payloads as hooks
from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.waits import shut
from tests.whatsapp.conftest import ALICE, Running, running, wa_settings

JUNK = "sha256=" + "0" * 64
WAIT_S = 20.0  # each wait below is over in well under a second


async def slow_post(
    port: int, declared: int | None, send: int, source: str = "127.0.0.1"
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Headers and `send` bytes of a body (of `declared` bytes, or chunked), then nothing;
    from the loopback address `source` (any of 127.0.0.0/8)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    length = (
        f"Content-Length: {declared}\r\n"
        if declared is not None
        else "Transfer-Encoding: chunked\r\n"
    )
    writer.write(
        (
            f"POST /whatsapp/webhook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nX-Hub-Signature-256: {JUNK}\r\n{length}\r\n"
        ).encode()
    )
    body = b"x" * send
    writer.write(body if declared is not None else f"{send:x}\r\n".encode() + body + b"\r\n")
    await writer.drain()
    return reader, writer


async def status_of(reader: asyncio.StreamReader) -> tuple[int, str]:
    """The response's status and its Retry-After header ("" without one)."""
    async with asyncio.timeout(WAIT_S):
        head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    retry = [v.split(":", 1)[1].strip() for v in lines if v.lower().startswith("retry-after:")]
    return int(lines[0].split()[1]), (retry or [""])[0]


async def until_reading(r: Running, size: int) -> None:
    async with asyncio.timeout(WAIT_S):
        while r.channel.reading != size:
            await asyncio.sleep(0.01)


async def test_unsigned_bodies_cannot_hold_more_than_the_budget(
    home: Path, fake: FakeWhatsApp
) -> None:
    backend = ScriptedBackend("still here")
    async with running(wa_settings(home, fake), fake, backend) as r:
        held = []
        share = MAX_BODY - 1  # each one byte short of its declared length: never done
        count = (BODY_BUDGET - RESERVE) // MAX_BODY  # as many as fit, one per address
        for n in range(count):
            held.append(await slow_post(r.web_port, MAX_BODY, share, f"127.0.0.{n + 2}"))
            await until_reading(r, (n + 1) * share)
        # one more declaring a full body, from an address holding nothing: refused at once
        reader, writer = await slow_post(r.web_port, MAX_BODY, 1024, "127.0.0.100")
        assert await status_of(reader) == (503, "5")
        await shut(writer)
        # one more that only streams (no Content-Length): refused once it would pass
        reader, writer = await slow_post(r.web_port, None, 2 * 1024 * 1024, "127.0.0.101")
        assert await status_of(reader) == (503, "5")
        await shut(writer)
        assert r.channel.reading == count * share <= BODY_BUDGET
        # Meta's small signed delivery still fits and is answered meanwhile
        await fake.text(ALICE, "are you there?")
        await r.channel.idle()
        assert fake.texts(ALICE) == ["still here"]
        for _, writer in held:
            await shut(writer)
        await until_reading(r, 0)  # the clients went away: their bytes are given back
    assert r.events("message.received") and len(backend.requests) == 1


async def test_a_body_that_does_not_arrive_in_time_is_408(home: Path, fake: FakeWhatsApp) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend("never")) as r:
        r.channel.body_deadline_s = 0.3
        reader, writer = await slow_post(r.web_port, 1000, 10)
        assert (await status_of(reader))[0] == 408
        assert r.channel.reading == 0
        await shut(writer)
        assert fake.sent == []


async def test_a_client_gone_mid_body_leaves_no_traceback(
    home: Path, fake: FakeWhatsApp, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend("never")) as r:
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                _, writer = await slow_post(r.web_port, 100_000, 5000)
                await asyncio.sleep(0.1)  # the handler is reading the body
                writer.transport.abort()  # a reset, mid-body
            await asyncio.sleep(0.2)
            _, body = hooks.text(fake.phone_number_id, ALICE, "after")
            assert await fake.post(json.dumps(body).encode()) == (401, "")
    errors = [rec for rec in caplog.records if rec.levelno >= logging.ERROR]
    assert errors == [], [rec.getMessage() for rec in errors]
