"""Hostile files read in real decoder processes: each is refused by the limit it would
break, named with its figures; a decoder that hangs, crashes or lies is killed and
reported, never trusted; shutdown and a cancelled turn kill decoders; a decoder is
confined (no file written, no socket, no new process).

The files come from tests/senses/hostile.py (public write-ups of image and PDF
bombs). The pool is the real one (`bridge.senses.decoders`); where a decoder must
misbehave on purpose, the pool is pointed at a small fake decoder executable
(`PoolSettings.python`), the seam through which it starts its processes.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
import socket
import stat
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_asyncio
from PIL import Image

from bridge.senses.decode_confine import confine
from bridge.senses.decode_wire import Job
from bridge.senses.decoders import Decoded, DecodeFailed, DecoderPool, PoolSettings
from tests.procs import gone
from tests.senses.hostile import (
    dense_pdf,
    flat_jpeg,
    gif_claiming,
    inflate_bomb_pdf,
    jpeg_claiming,
    many_scans_jpeg,
    png_claiming,
    webp_lossless,
)
from tests.senses.samples import make_pdf

IMAGE = Job("image", 20_000_000, 120.0)  # a generous deadline: these must not need it
LIMIT = 40_000_000
PROGRESSIVE = flat_jpeg(64, 64, progressive=True)


@pytest.fixture
async def pool() -> AsyncIterator[DecoderPool]:
    """A pool of this test's own: for the tests that read or change its processes."""
    made = DecoderPool(PoolSettings(slots=2))
    yield made
    await made.aclose()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared() -> AsyncIterator[DecoderPool]:
    """One pool for the tests that only decode: each file is still read in a fresh
    process (one per file, then it exits), so what a test sees is its file's reply alone;
    sharing saves each test a spare started for nothing (a Python start-up importing
    Pillow and pypdf, about 0.1 s of CPU). The pool's own processes are checked by the
    tests that make their own (`pool` and below)."""
    made = DecoderPool(PoolSettings(slots=2))
    yield made
    await made.aclose()


SHARED = pytest.mark.asyncio(loop_scope="module")  # the loop `shared` runs on


async def decode(pool: DecoderPool, tmp: Path, data: bytes, job: Job, tenant: str = "a") -> Decoded:
    fd = os.memfd_create("attachment")
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    try:
        return await pool.decode(tenant, job, fd)
    finally:
        os.close(fd)


PIXEL_BOMBS = [
    ("PNG 50000²", png_claiming(50_000, 50_000), 50_000, 50_000),
    ("PNG 200000×300", png_claiming(200_000, 300), 200_000, 300),
    ("PNG 8000×6000", png_claiming(8000, 6000), 8000, 6000),
    ("GIF 65535²", gif_claiming(65_535, 65_535), 65_535, 65_535),
    ("WebP 16384²", webp_lossless(16_384, 16_384), 16_384, 16_384),
    ("WebP 6400²", webp_lossless(6400, 6400), 6400, 6400),
    # baseline: decoded at 1/8 at best, 8125² is still too many
    ("JPEG 65000²", jpeg_claiming(flat_jpeg(64, 64), 65_000, 65_000), 65_000, 65_000),
    # progressive: every coefficient of the full image is kept, whatever the scale
    ("progressive JPEG 8000×6000", jpeg_claiming(PROGRESSIVE, 8000, 6000), 8000, 6000),
]


@pytest.mark.parametrize(("label", "data", "width", "height"), PIXEL_BOMBS)
@SHARED
async def test_a_huge_canvas_is_refused_by_its_size_before_decoding(
    shared: DecoderPool, tmp_path: Path, label: str, data: bytes, width: int, height: int
) -> None:
    assert len(data) < 1000, label  # a few bytes claiming a canvas
    reply = (await decode(shared, tmp_path, data, IMAGE)).reply
    assert (reply.ok, reply.why) == (False, "pixels"), label
    assert (reply.width, reply.height, reply.limit) == (width, height, LIMIT)


@SHARED
async def test_the_pixel_limit_is_the_jobs(shared: DecoderPool, tmp_path: Path) -> None:
    bomb = webp_lossless(6300, 6300)  # 39.7 megapixels from 32 bytes: under 40, over 10
    job = Job("image", 20_000_000, 120.0, max_pixels=10_000_000)
    reply = (await decode(shared, tmp_path, bomb, job)).reply
    assert (reply.why, reply.width, reply.limit) == ("pixels", 6300, 10_000_000)


@SHARED
async def test_a_large_baseline_jpeg_is_decoded_at_a_fraction_of_its_size(
    shared: DecoderPool, tmp_path: Path
) -> None:
    photo = flat_jpeg(8000, 6000)  # 48 megapixels, over the limit, but decoded at 1/4
    done = await decode(shared, tmp_path, photo, IMAGE)
    assert done.reply.ok and done.reply.mime == "image/jpeg"
    with Image.open(io.BytesIO(done.blob)) as img:
        assert img.size == (1568, 1176)


@SHARED
async def test_a_progressive_jpeg_with_thousands_of_scans_is_refused_unread(
    shared: DecoderPool, tmp_path: Path
) -> None:
    bomb = many_scans_jpeg(512, 512, 2000)
    reply = (await decode(shared, tmp_path, bomb, IMAGE)).reply
    assert (reply.why, reply.limit) == ("scans", 100) and reply.scans > 100
    ordinary = flat_jpeg(640, 480, progressive=True)  # Pillow's progression: a few scans
    assert (await decode(shared, tmp_path, ordinary, IMAGE)).reply.ok


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (flat_jpeg(640, 480)[:300], "damaged"),
        (flat_jpeg(640, 480, progressive=True)[:-200], "damaged"),
        (png_claiming(64, 64)[:40], "damaged"),
        (webp_lossless(300, 200)[:24], "damaged"),
        (gif_claiming(300, 200)[:20], "damaged"),
        (b"<html><script>alert(1)</script></html>", "format"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "damaged"),
    ],
)
@SHARED
async def test_truncated_and_fake_images_get_a_reason(
    shared: DecoderPool, tmp_path: Path, data: bytes, why: str
) -> None:
    reply = (await decode(shared, tmp_path, data, IMAGE)).reply
    assert (reply.ok, reply.why) == (False, why)


@SHARED
async def test_a_pdf_of_dense_shared_content_stops_at_the_deadline(
    shared: DecoderPool, tmp_path: Path
) -> None:
    bomb = dense_pdf()  # 300 pages, seconds each: far more than 3 s on any machine
    assert len(bomb) < 70_000
    reply = (await decode(shared, tmp_path, bomb, Job("pdf", 20_000_000, 3.0))).reply
    # either nothing finished in time, or some pages did and the rest were left
    assert reply.why == "time" or (reply.ok and reply.stopped == "time" and reply.read < 300)


@SHARED
async def test_pdf_bounds_pages_and_characters(shared: DecoderPool, tmp_path: Path) -> None:
    pages = [f"page {n} " + "words " * 50 for n in range(1, 41)]
    pdf = make_pdf(pages)
    job = Job("pdf", 20_000_000, 60.0)
    by_pages = (await decode(shared, tmp_path, pdf, replace(job, max_pages=5))).reply
    assert (by_pages.pages, by_pages.read, by_pages.stopped) == (40, 5, "pages")
    by_chars = (await decode(shared, tmp_path, pdf, replace(job, max_chars=1000))).reply
    assert by_chars.stopped == "chars" and by_chars.read < 10 and len(by_chars.text) == 1000
    bomb = (await decode(shared, tmp_path, inflate_bomb_pdf(), Job("pdf", 20_000_000, 60.0))).reply
    assert bomb.ok is False and bomb.why in ("no_text", "invalid")  # bounded, and said


def fake_decoder(tmp: Path, body: str) -> str:
    """An executable the pool starts instead of Python: it says ready, then `body`."""
    path = tmp / "fake_decoder"
    path.write_text(
        f"#!{sys.executable}\n"
        "import json, os, struct, sys, time\n"
        "def put(doc):\n"
        "    raw = json.dumps(doc).encode()\n"
        "    os.write(1, struct.pack('>I', len(raw)) + raw)\n"
        "put({'ready': True, 'missing': [], 'blob': 0})\n"
        "os.read(0, 65536)\n" + body + "\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


async def test_a_decoder_that_never_answers_is_killed_after_the_deadline(tmp_path: Path) -> None:
    pool = DecoderPool(PoolSettings(python=fake_decoder(tmp_path, "time.sleep(3600)"), spares=0))
    try:
        task = asyncio.ensure_future(decode(pool, tmp_path, b"x", Job("image", 100, 1.0)))
        while not pool.pids:  # wait until it runs
            await asyncio.sleep(0.01)
        (pid,) = pool.pids
        with pytest.raises(DecodeFailed) as failed:
            await asyncio.wait_for(task, 120)
        assert failed.value.why == "time" and gone(pid) and pool.pids == []
    finally:
        await pool.aclose()


@pytest.mark.parametrize(
    "body",
    [
        "os._exit(3)",  # dies without a word
        "os.write(1, struct.pack('>I', 2**31))",  # claims a 2 GiB frame: nothing more is read
        "os.write(1, struct.pack('>I', 5) + b'nope!')",  # not JSON
        "put({'ok': True, 'text': 'x', 'extra': 1})",  # a field roost does not know
        "put({'ok': False, 'why': 'because'})",  # a reason roost does not know
        "put({'ok': True, 'text': 'x' * 101})",  # more text than the job allowed
    ],
)
async def test_a_decoder_that_crashes_or_lies_is_not_believed(tmp_path: Path, body: str) -> None:
    pool = DecoderPool(PoolSettings(python=fake_decoder(tmp_path, body), spares=0))
    try:
        with pytest.raises(DecodeFailed) as failed:
            await decode(pool, tmp_path, b"x", Job("text", 100, 60.0, max_chars=100, kind="text"))
        assert failed.value.why == "crashed" and pool.pids == []
    finally:
        await pool.aclose()


async def test_closing_the_pool_kills_running_and_spare_decoders(tmp_path: Path) -> None:
    pool = DecoderPool(PoolSettings(slots=2))
    task = asyncio.ensure_future(decode(pool, tmp_path, dense_pdf(), Job("pdf", 10**7, 600.0)))
    while len(pool.pids) < 2:  # the one reading and the spare
        await asyncio.sleep(0.01)
    pids = pool.pids
    await pool.aclose()
    with pytest.raises(DecodeFailed) as failed:
        await asyncio.wait_for(task, 60)
    assert failed.value.why == "closed"
    assert all(gone(pid) for pid in pids) and pool.pids == []
    with pytest.raises(DecodeFailed):
        await decode(pool, tmp_path, b"x", IMAGE)


async def test_a_cancelled_turn_kills_its_decoder(pool: DecoderPool, tmp_path: Path) -> None:
    task = asyncio.ensure_future(decode(pool, tmp_path, dense_pdf(), Job("pdf", 10**7, 600.0)))
    while len(pool.pids) < 2:
        await asyncio.sleep(0.01)
    running = pool.pids
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    while any(not gone(pid) for pid in running if pid not in pool.pids):
        await asyncio.sleep(0.01)
    assert len(pool.pids) == 1  # only the spare is left


async def test_a_tenant_with_too_many_files_waiting_is_told_at_once(tmp_path: Path) -> None:
    pool = DecoderPool(PoolSettings(slots=2, max_waiting=1))
    try:
        long = Job("pdf", 10**7, 600.0)
        running = asyncio.ensure_future(decode(pool, tmp_path, dense_pdf(), long))
        waiting = asyncio.ensure_future(decode(pool, tmp_path, dense_pdf(), long))
        while pool._slots.waiting("a") == 0:
            await asyncio.sleep(0.01)
        with pytest.raises(DecodeFailed) as failed:
            await decode(pool, tmp_path, dense_pdf(), long)
        assert failed.value.why == "busy"
        other = await decode(pool, tmp_path, webp_lossless(64, 64), IMAGE, tenant="b")
        assert other.reply.ok  # another tenant's file is read meanwhile
        for task in (running, waiting):
            task.cancel()
        await asyncio.gather(running, waiting, return_exceptions=True)
    finally:
        await pool.aclose()


async def test_a_spare_that_died_while_waiting_is_replaced(
    pool: DecoderPool, tmp_path: Path
) -> None:
    assert (await decode(pool, tmp_path, webp_lossless(64, 64), IMAGE)).reply.ok
    while not pool.pids:  # the spare for the next file
        await asyncio.sleep(0.01)
    (spare,) = pool.pids
    os.kill(spare, signal.SIGKILL)  # as the OOM killer would
    while not gone(spare):
        await asyncio.sleep(0.01)
    assert (await decode(pool, tmp_path, webp_lossless(64, 64), IMAGE)).reply.ok


def test_a_decoder_is_confined() -> None:
    """`confine` in a forked child: no file written, no socket, no new process."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(read)
        failures = 0
        try:
            confine(os.getppid(), 512 * 1024 * 1024)
            for attempt in (
                lambda: open("/tmp/decoder-was-here", "w").close(),
                lambda: socket.socket().close(),
                os.fork,
                lambda: bytearray(1024 * 1024 * 1024),
            ):
                try:
                    attempt()
                except (OSError, MemoryError):
                    failures += 1
        finally:
            os.write(write, bytes([failures]))
            os._exit(0)
    os.close(write)
    got = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    assert got == bytes([4]), got
    assert not Path("/tmp/decoder-was-here").exists()
