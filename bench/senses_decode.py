"""Senses benchmark, part of bench/senses.py: a file read in-process vs in a decoder.

In-process is how roost read attachments before issue 21 (Pillow or pypdf in
a thread of the daemon); the decoder is `bridge.senses.decoders.DecoderPool`
with its spare ready (one process per file, confined, then gone). Both read
the same bytes with the same limits in the same run; the ratio and the
difference are printed, no thresholds.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time

from bridge.senses.decode_image import downscale
from bridge.senses.decode_wire import Job
from bridge.senses.decoders import DecoderPool
from bridge.senses.pdf import pdf_text


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _direct(job: Job, data: bytes) -> None:
    if job.op == "image":
        downscale(data, job)
    else:
        pdf_text(data, job)


async def _in_process(job: Job, data: bytes) -> None:
    await asyncio.to_thread(_direct, job, data)


async def _in_decoder(pool: DecoderPool, job: Job, data: bytes) -> None:
    fd = os.memfd_create("bench")
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
        done = await pool.decode("bench", job, fd)
        assert done.reply.ok, done.reply
    finally:
        os.close(fd)


async def _spare_ready(pool: DecoderPool) -> None:
    """Wait until the pool's spare has started (as it has between two messages)."""
    for task in list(pool._spares):
        await asyncio.shield(task)


async def decode_overhead(runs: int, photo: bytes, pdf: bytes) -> None:
    pool = DecoderPool()
    try:
        for label, job, data in (
            ("photo 4000×3000 JPEG", Job("image", 20_000_000, 60.0), photo),
            ("PDF 20 pages", Job("pdf", 20_000_000, 60.0), pdf),
        ):
            inner: list[float] = []
            outer: list[float] = []
            floor: list[float] = []
            await _in_decoder(pool, job, data)  # warm-up: the spare exists from now on
            for _ in range(runs):
                await _spare_ready(pool)  # a spare starting would compete for the CPU
                t0 = time.perf_counter()
                await _in_process(job, data)
                inner.append(time.perf_counter() - t0)
                await _spare_ready(pool)
                t0 = time.perf_counter()
                _direct(job, data)  # the floor: the same work, blocking this thread
                floor.append(time.perf_counter() - t0)
                await _spare_ready(pool)
                t0 = time.perf_counter()
                await _in_decoder(pool, job, data)
                outer.append(time.perf_counter() - t0)
            f, a, b = _median_ms(floor), _median_ms(inner), _median_ms(outer)
            print(f"== {label}: median of {runs}")
            print(f"   floor: the loop's thread      {f:8.1f} ms")
            print(f"   in-process (a thread, before) {a:8.1f} ms   {a / f:5.2f}x floor")
            print(f"   decoder process (spare ready) {b:8.1f} ms   {b / f:5.2f}x floor")
        cold = []
        for _ in range(max(3, runs // 3)):
            fresh = DecoderPool()
            t0 = time.perf_counter()
            await _in_decoder(fresh, Job("image", 20_000_000, 60.0), photo)
            cold.append(time.perf_counter() - t0)
            await fresh.aclose()
        print(f"== first file after start (no spare yet): photo {_median_ms(cold):8.1f} ms")
    finally:
        await pool.aclose()
