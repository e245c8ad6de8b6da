"""Uploads arriving together cannot pass the limit of uploads waiting for a message.

Before, the limit (`MAX_PENDING`, 32 per tenant) was checked before the body
was read and the upload counted only once stored, so uploads in flight all
passed it (200 at once kept 118 files). Here each upload's body stops half
way until every one of them has either been answered or is being read by the
server, then they all finish: exactly `MAX_PENDING` are kept, the rest are
429, and a refused or failed upload gives its place back.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bridge.channels.web.upload import MAX_PENDING
from bridge.types.tenant_dirs import TenantDirs
from tests.spine.test_web_upload import TOKEN, Served, files_in, png, served
from tests.waits import HANG_S, shut, until

EXTRA = 8
BOUNDARY = "roostboundary0123456789"


def multipart(data: bytes) -> bytes:
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n'
        "Content-Type: image/png\r\n\r\n".encode()
        + data
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


class HalfSent:
    """An upload whose head and first half of the body are sent; `finish` sends the rest."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rest: bytes):
        self.writer, self.rest = writer, rest
        self.status = asyncio.create_task(reader.readline())

    @classmethod
    async def open(cls, port: int, body: bytes) -> HalfSent:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        half = len(body) // 2
        writer.write(
            f"POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n".encode()
            + body[:half]
        )
        return cls(reader, writer, body[half:])

    async def finish(self) -> int:
        if not self.status.done():
            self.writer.write(self.rest)
        line = await asyncio.wait_for(self.status, HANG_S)
        await shut(self.writer)
        return int(line.split()[1])


def reading(site: Served) -> int:
    """Requests whose body the server is reading now."""
    return sum(1 for conn in site.web.guard.table.all() if conn.body is not None)


async def test_uploads_in_flight_hold_their_place_under_the_limit(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with served(home, monkeypatch) as site:
        body = multipart(png())
        uploads: list[HalfSent] = []
        for _ in range(MAX_PENDING + EXTRA):
            uploads.append(await HalfSent.open(site.web.port, body))
            await until(  # the server has either answered it or waits for the rest
                lambda: reading(site) + sum(u.status.done() for u in uploads) == len(uploads),
                "the server taking the upload",
            )
        statuses = [await u.finish() for u in uploads]
        assert statuses.count(200) == MAX_PENDING and statuses.count(429) == EXTRA
        inbox = TenantDirs.of(home, site.roost.settings.local_tenant).inbox
        assert len(files_in(inbox)) == MAX_PENDING
        status, said = await site.upload(png(), "b.png", "image/png")
        assert status == 429 and "waiting for a message" in said["error"]


async def test_a_failed_upload_gives_its_place_back(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with served(home, monkeypatch) as site:
        for _ in range(MAX_PENDING + EXTRA):  # refused: no kind of file roost reads
            status, _ = await site.upload(b"\x00" * 64, "x.bin")
            assert status in (400, 415)
        for _ in range(MAX_PENDING):
            status, _ = await site.upload(png(), "a.png", "image/png")
            assert status == 200
        status, _ = await site.upload(png(), "a.png", "image/png")
        assert status == 429
