"""Senses benchmark: roost's own work per attachment, the model excluded.

For a 1 MB photo (a 4000×3000 JPEG, gradient plus noise, as a phone's) and
a 20-page PDF (made with pypdf's own writer: Helvetica text, 40 lines a
page, see tests/senses/samples.py), each stage is timed separately, with
python-telegram-bot's real `Bot` against the fake Bot API on loopback:

- fetch: `getFile` + the streamed download into the inbox
  (`bridge.channels.telegram.files_in`);
- read: the senses handler (photo: Pillow decode with JPEG draft scaling,
  EXIF orientation, downscale to 1568, JPEG re-encode; PDF: pypdf text
  layer of every page, framing and the cut at 20,000 characters);
- wire: the OpenAI request body with the image as a base64 data URL.

Prints medians and p90 over `--runs` runs (default 15); no thresholds.

`--decode`: the same photo and PDF read in-process (a thread, as roost did
before issue 21) and through a decoder process (`bridge.senses.decoders`,
a spare ready), and the overhead as a ratio of the two in the same run.

`--bombs N`: the real daemon (`roost serve`, fake model) while one tenant
sends N 32-byte WebPs of 6300² pixels (as in issue 21) and six PDFs of 300
dense pages at once: `/healthz` latency, another tenant's photo turn, the
daemon's RSS and the decoders' RSS, next to the same figures idle.

Run: .venv/bin/python -m bench.senses [--runs 15] [--decode] [--bombs 50] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
import statistics
import tempfile
import time
from pathlib import Path

from PIL import Image
from telegram import Bot

from bridge.channels.telegram.files_in import FilesIn, Offer, file_base_url
from bridge.core.perceive import Prepared
from bridge.llm.openai_wire import build_body
from bridge.senses.decode_wire import Job
from bridge.senses.decoders import Decoded, DecoderPool
from bridge.senses.documents import document
from bridge.senses.handlers import SenseContext, SenseLimits
from bridge.senses.photos import photo
from bridge.types.backend import ChatMessage, ModelRequest
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext
from tests.senses.samples import make_pdf
from tests.telegram.fake_bot_api import FakeBotAPI

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"


def phone_photo(target: int = 1_000_000) -> bytes:
    """A 4000×3000 JPEG of about `target` bytes: a gradient with noise mixed in."""
    rng = random.Random(7)
    base = Image.linear_gradient("L").resize((4000, 3000)).convert("RGB")
    noise = Image.frombytes("RGB", (1000, 750), rng.randbytes(1000 * 750 * 3)).resize((4000, 3000))
    img = Image.blend(base, noise, 0.25)
    for quality in range(85, 20, -5):
        out = io.BytesIO()
        img.save(out, "JPEG", quality=quality)
        if out.tell() <= target * 1.1:
            break
    return out.getvalue()


def twenty_pages() -> bytes:
    rng = random.Random(3)
    words = ["invoice", "total", "amount", "due", "payment", "account", "order", "tax"]
    pages = [
        "\n".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(40))
        for _ in range(20)
    ]
    return make_pdf(pages)


def stats(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    return f"median {statistics.median(ms):7.1f} ms   p90 {p90:7.1f} ms"


async def one(
    bot: Bot, files: FilesIn, offer: Offer, ctx: SenseContext, inbox: Path
) -> tuple[float, float, float, Prepared]:
    t0 = time.perf_counter()
    att = await files._fetch(bot, offer, ctx.turn.dirs, 20_000_000)
    t1 = time.perf_counter()
    handler = photo if offer.kind == "photo" else document
    prepared = await handler(att, ctx)
    t2 = time.perf_counter()
    message = ChatMessage("user", prepared.asked("what is this?"), images=prepared.images)
    build_body("m", ModelRequest("system", [message]))
    t3 = time.perf_counter()
    await asyncio.to_thread(Path(att.path).unlink)
    return t1 - t0, t2 - t1, t3 - t2, prepared


async def main(runs: int) -> None:
    samples = {"photo": phone_photo(), "pdf": twenty_pages()}
    with tempfile.TemporaryDirectory() as tmp:
        dirs = TenantDirs.of(Path(tmp), "bench").ensure()
        dirs.inbox.mkdir(mode=0o700)
        turn = TurnContext(dirs, Inbound("telegram", "1", "1", "", "m1"), time.time)
        pool = DecoderPool()  # the daemon reads every file in a decoder process

        async def decode(job: Job, fd: int) -> Decoded:
            return await pool.decode("bench", job, fd)

        ctx = SenseContext(turn, SenseLimits(), vision=True, decode=decode)
        async with FakeBotAPI(TOKEN) as fake:
            bot = Bot(TOKEN, base_url=fake.base_url, base_file_url=file_base_url(fake.base_url))
            await bot.initialize()
            files = FilesIn(lambda i: dirs, lambda: 20_000_000, file_base_url(fake.base_url))
            for kind, data in samples.items():
                stored = fake.files.add(data, "bench", ".jpg" if kind == "photo" else ".pdf")
                att_kind = "photo" if kind == "photo" else "document"
                name, mime = (
                    ("p.jpg", "image/jpeg") if kind == "photo" else ("r.pdf", "application/pdf")
                )
                offer = Offer(att_kind, stored.file_id, name, mime, len(data))
                await one(bot, files, offer, ctx, dirs.inbox)  # warm-up
                rows: list[tuple[float, float, float, Prepared]] = []
                for _ in range(runs):
                    rows.append(await one(bot, files, offer, ctx, dirs.inbox))
                prepared = rows[-1][3]
                print(f"== {kind}: {len(data) / 1_048_576:.2f} MB")
                if prepared.images:
                    with Image.open(io.BytesIO(prepared.images[0].data)) as img:
                        print(
                            f"   sent to the model: {img.size[0]}×{img.size[1]} JPEG, "
                            f"{len(prepared.images[0].data) / 1024:.0f} KB"
                        )
                else:
                    print(f"   text in the turn: {len(prepared.text_prefix):,} characters")
                print(f"   fetch (getFile + download)  {stats([r[0] for r in rows])}")
                print(f"   read (decode/resize/parse)  {stats([r[1] for r in rows])}")
                print(f"   wire (request body)         {stats([r[2] for r in rows])}")
                print(f"   total                       {stats([sum(r[:3]) for r in rows])}")
            await bot.shutdown()
        await pool.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--decode", action="store_true", help="in-process vs decoder process")
    parser.add_argument("--bombs", type=int, default=0, help="N WebP bombs against the daemon")
    parser.add_argument("--quick", action="store_true", help="one run (CI: it still runs)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
    if args.decode:
        from bench.senses_decode import decode_overhead

        asyncio.run(decode_overhead(args.runs, phone_photo(), twenty_pages()))
    elif args.bombs:
        from bench.senses_bombs import under_bombs

        asyncio.run(under_bombs(args.bombs))
    else:
        asyncio.run(main(args.runs))
