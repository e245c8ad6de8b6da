"""Web upload benchmark: what roost's own upload route costs per file, against
a route that only reads the same body and throws it away, in the same run.

Each case posts one file (multipart, the way the page does) over loopback to
`POST /api/upload` (streamed to the tenant's inbox: size count, sniffing,
fsync, rename) and, as the floor, to a bare aiohttp route that reads the
multipart part and discards it. The difference is roost's overhead per
attachment (sniffing and the durable write), excluding the model.

Run: .venv/bin/python -m bench.web_upload [--rounds 15] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import BodyPartReader, web
from aiohttp.test_utils import TestServer

from bridge.channels.common.sniff import Sniffer
from bridge.channels.web.gate import WebGate
from bridge.channels.web.upload import WebUploads

TOKEN = "bench-token-0123456789abcdef"


def cases() -> dict[str, tuple[str, bytes]]:
    noise = os.urandom
    return {
        "photo 1 MB (JPEG)": ("photo.jpg", b"\xff\xd8\xff\xe0" + noise(1_000_000)),
        "voice 30 s (WebM/Opus, 32 kbit/s)": (
            "voice.webm",
            bytes.fromhex("1a45dfa39f4286810142f7810142f2810442f381084282847765626d")
            + noise(120_000),
        ),
        "PDF 20 pages (~2 MB)": ("doc.pdf", b"%PDF-1.7\n" + noise(2_000_000)),
        "CSV 5 MB (text)": (
            "big.csv",
            b"date,amount,note\n" + b"2026-12-01,12.50,coffee\n" * 210_000,
        ),
    }


async def discard(request: web.Request) -> web.Response:
    reader = await request.multipart()
    part = await reader.next()
    assert isinstance(part, BodyPartReader)
    while await part.read_chunk(64 * 1024):
        pass
    return web.json_response({"ok": True})


async def post(http: aiohttp.ClientSession, path: str, name: str, data: bytes) -> float:
    form = aiohttp.FormData()
    form.add_field("file", data, filename=name, content_type="application/octet-stream")
    t = time.perf_counter()
    async with http.post(path, data=form, headers={"Authorization": f"Bearer {TOKEN}"}) as r:
        assert r.status == 200, await r.text()
        await r.read()
    return time.perf_counter() - t


async def run(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        uploads = WebUploads(WebGate({TOKEN: "local"}, "local"), lambda t: Path(tmp) / t, 64 << 20)
        app = web.Application()
        uploads.mount(app)
        app.router.add_post("/floor", discard)
        async with (
            TestServer(app) as server,
            aiohttp.ClientSession(str(server.make_url(""))) as http,
        ):
            print(f"{'file':36} {'floor ms':>9} {'upload ms':>10} {'overhead ms':>12} {'ratio':>6}")
            for label, (name, data) in cases().items():
                floor, real = [], []
                for _ in range(rounds):  # interleaved, so drift hits both alike
                    floor.append(await post(http, "/floor", name, data))
                    real.append(await post(http, "/api/upload", name, data))
                    uploads._pending.clear()
                f, u = statistics.median(floor) * 1e3, statistics.median(real) * 1e3
                print(f"{label:36} {f:9.2f} {u:10.2f} {u - f:12.2f} {u / f:6.2f}")
    sniff_rate()


def sniff_rate() -> None:
    text = b"2026-12-01,12.50,coffee\n" * 400_000  # ~9.6 MB of text, the slowest path
    t = time.perf_counter()
    s = Sniffer()
    for i in range(0, len(text), 64 * 1024):
        s.feed(text[i : i + 64 * 1024])
    assert s.result("x.csv") is not None
    dt = time.perf_counter() - t
    print(f"sniffing text (UTF-8 check, 64 KiB chunks): {len(text) / dt / 1e6:.0f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="one round (CI: it still runs)")
    args = parser.parse_args()
    asyncio.run(run(1 if args.quick else args.rounds))


if __name__ == "__main__":
    main()
