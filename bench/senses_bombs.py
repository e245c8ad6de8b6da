"""Senses benchmark, part of bench/senses.py: the daemon while one tenant sends bombs.

The real daemon (`roost serve`, the fake OpenAI server as its model, web on a
loopback port) is measured idle and then while one tenant sends N lossless
WebPs of 6300² pixels (32 bytes each, as in issue 21) and six PDFs of 300
dense pages, each with a message in its own chat, all at once:

- `/healthz` latency (median, p90, max of 40 sequential requests);
- another tenant's turn with a small photo (upload + chat), median of 3;
- the daemon's RSS and the decoders' summed RSS, sampled every 50 ms (max);
- how long SIGTERM takes to end the daemon while the bombs are still read.

Ratios are to the idle figures of the same run; no thresholds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp

from tests.fakes.fake_openai import FakeOpenAI
from tests.senses.hostile import dense_pdf, webp_lossless
from tests.senses.samples import make_png
from tests.senses.test_bombs_daemon import BOB, decoders_of, send_with_file
from tests.spine.test_daemon import env_for, start_daemon

KEY = "sk-test-key-000000000000"


def rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


async def healthz(http: aiohttp.ClientSession, n: int = 40) -> list[float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        async with http.get("/healthz") as r:
            await r.read()
        samples.append(time.perf_counter() - t0)
    return samples


async def other_turn(http: aiohttp.ClientSession, runs: int = 3) -> list[float]:
    samples = []
    for n in range(runs):
        t0 = time.perf_counter()
        status, _ = await send_with_file(
            http, BOB, make_png(64, 48), "cat.png", "image/png", "what?", f"bob{n}"
        )
        assert status == 200
        samples.append(time.perf_counter() - t0)
    return samples


async def until(ready: Callable[[], bool]) -> None:
    """Poll `ready` until it holds (a readiness check, not a fixed wait)."""
    while not ready():  # noqa: ASYNC110  (/proc has no event to wait on)
        await asyncio.sleep(0.05)


def row(label: str, samples: list[float], idle: list[float] | None = None) -> str:
    ms = sorted(s * 1000 for s in samples)
    med, p90 = statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    ratio = f"   {med / (statistics.median(idle) * 1000):6.1f}x idle" if idle else ""
    return f"   {label:28} median {med:8.1f} ms  p90 {p90:8.1f}  max {ms[-1]:8.1f}{ratio}"


def sample_rss(pid: int, peak: dict[str, float], stop: threading.Event) -> None:
    """In a thread of its own: scanning /proc must not delay this loop's requests."""
    while not stop.wait(0.05):
        peak["daemon"] = max(peak["daemon"], rss_mib(pid))
        peak["decoders"] = max(peak["decoders"], sum(rss_mib(d) for d in decoders_of(pid)))


async def under_bombs(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "roost.toml"
        config.write_text(f'[tenants.bob]\nweb_token = "{BOB}"\n')
        os.environ["ROOST_CONFIG"] = str(config)
        async with FakeOpenAI(api_key=KEY, models=["m1"]) as fake:
            env = env_for(Path(tmp) / "home", fake) | {
                "ROOST_LLM__VISION": "true",
                "ROOST_LIMITS__DECODE_SECONDS": "60",
                "ROOST_GRADING__JUDGE_DAILY_CAP": "0",
            }
            daemon = await start_daemon(env)
            pid = daemon.proc.pid
            token = (Path(tmp) / "home" / "web-token").read_text().strip()
            async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
                await other_turn(http, 1)  # warm: the first decoder started
                idle_health, idle_turn = await healthz(http), await other_turn(http)
                idle_rss = rss_mib(pid)
                webp, pdf = webp_lossless(6300, 6300), dense_pdf()
                sends = [(webp, f"w{i}.webp", "image/webp") for i in range(n)]
                sends += [(pdf, f"p{i}.pdf", "application/pdf") for i in range(6)]
                bombs = [
                    asyncio.ensure_future(send_with_file(http, token, d, f, m, "?", f"c{i}"))
                    for i, (d, f, m) in enumerate(sends)
                ]
                peak = {"daemon": 0.0, "decoders": 0.0}
                stop = threading.Event()
                sampler = threading.Thread(target=sample_rss, args=(pid, peak, stop))
                sampler.start()
                await until(lambda: len(decoders_of(pid)) >= 2)  # a bomb is being read
                busy_health, busy_turn = await healthz(http), await other_turn(http)
                t0 = time.perf_counter()
                daemon.proc.send_signal(signal.SIGTERM)
                await daemon.proc.wait()
                stopped = time.perf_counter() - t0
                done = sum(1 for b in bombs if b.done() and not b.exception())
                stop.set()
                sampler.join()
                await asyncio.gather(*bombs, return_exceptions=True)
    print(f"== the daemon idle, then while {n} WebP bombs (6300², 32 bytes) and 6 PDF bombs")
    print("   (300 dense pages) of one tenant are read; decoders = 2, decode_seconds = 60")
    print(row("/healthz idle", idle_health))
    print(row("/healthz under bombs", busy_health, idle_health))
    print(row("other tenant's photo, idle", idle_turn))
    print(row("other tenant's photo, bombs", busy_turn, idle_turn))
    print(f"   daemon RSS idle {idle_rss:6.0f} MiB   max under bombs {peak['daemon']:6.0f} MiB")
    print(f"   decoders' RSS (all of them) max {peak['decoders']:6.0f} MiB")
    print(f"   SIGTERM to exit under bombs: {stopped * 1000:.0f} ms ({done} bombs answered before)")
