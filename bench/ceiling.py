"""The ceiling of one roost process: turns/s by client count, and tenants vs memory.

Prints, in one run on this machine (figures go to docs/scaling.md):
1. turns/s through `POST /api/chat` with 1, 10 and 100 concurrent clients
   against a bare aiohttp echo (the floor) and a roost daemon process with a
   zero-latency model (reuses
   `bench/turn.py`'s server and load loop), and the same with `/metrics`
   on, scraped once a second, to show that counting costs nothing visible;
2. tenants vs RSS: one process serves a first turn for each of N distinct
   Telegram tenants (configured ids, real SQLite, real audit chain,
   zero-latency model); RSS, disk under the home and first-turn rate are
   printed at each step.

Run: `.venv/bin/python bench/ceiling.py [--seconds S] [--tenants N] [--quick]`
(`--quick`: 0.5 s per point and 100 tenants, the same tables in seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import bench.turn as turn
from bridge.app.build import build
from bridge.core.config import TenantRule
from bridge.types.messages import Inbound


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def disk_mib(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 2**20


async def tenants_vs_rss(
    total: int, steps: tuple[int, ...]
) -> list[tuple[int, float, float, float]]:
    """(tenants served, RSS MiB, disk MiB, first turns/s in the last step)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = turn.isolated_settings(Path(tmp))
        rules = {f"t{i}": TenantRule(telegram_ids=[10_000 + i]) for i in range(total)}
        settings = settings.model_copy(update={"tenants": rules})
        roost = await build(settings, backend=turn.EchoModel())
        rows.append((0, rss_mib(), disk_mib(settings.home), 0.0))
        served = 0
        try:
            for target in steps:
                start = time.perf_counter()
                for i in range(served, target):
                    uid = str(10_000 + i)
                    await roost.core.handle(Inbound("telegram", uid, uid, "hello", str(i + 1)))
                rate = (target - served) / (time.perf_counter() - start)
                served = target
                rows.append((served, rss_mib(), disk_mib(settings.home), rate))
        finally:
            await roost.aclose()
    return rows


def serve_roost_metrics(port_q: Any, home: str) -> None:
    """bench/turn.py's zero-latency daemon with `/metrics` on."""

    async def main() -> None:
        from bridge.channels.web.channel import WebChannel

        settings = turn.isolated_settings(Path(home), ROOST_WEB__TOKEN=turn.TOKEN)
        roost = await build(settings, backend=turn.EchoModel())
        channel = WebChannel(
            roost.core.handle,
            roost.command_list,
            turn.TOKEN,
            "127.0.0.1",
            0,
            metrics=roost.metrics.render,
        )
        turn.ServerMeter().mount(channel.app)  # the bench's /bench/cpu, as turn.load reads it
        await channel.start()
        port_q.put(channel.port)
        await asyncio.Event().wait()

    asyncio.run(main())


async def load_scraped(port: int, clients: int, seconds: float) -> tuple[float, int]:
    """Load as bench/turn.py does while a scraper reads /metrics once a second."""
    import aiohttp

    headers = {"Authorization": f"Bearer {turn.TOKEN}"}
    scrapes = 0

    async def scraper() -> None:
        nonlocal scrapes
        async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
            for _ in range(int(seconds)):
                async with http.get("/metrics", headers=headers) as r:
                    assert r.status == 200 and "roost_turns_total" in await r.text()
                scrapes += 1
                await asyncio.sleep(1)

    point, _ = await asyncio.gather(turn.load(port, clients, seconds), scraper())
    return point.rate, scrapes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--tenants", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="0.5 s per point, 100 tenants")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.tenants = 0.5, 100

    with tempfile.TemporaryDirectory() as tmp1, tempfile.TemporaryDirectory() as tmp2:
        echo_proc, echo_port = turn.start(turn.serve_echo)
        plain_proc, plain_port = turn.start(turn.serve_roost, tmp1, None)
        metered_proc, metered_port = turn.start(serve_roost_metrics, tmp2)
        try:
            print(f"POST /api/chat turns/s, zero-latency model ({args.seconds:g} s per point)")
            print(
                f"{'clients':>8} {'bare echo':>10} {'roost':>8} {'echo/roost':>11} "
                f"{'+/metrics scraped 1/s':>22}"
            )
            for clients in (1, 10, 100):
                echo = asyncio.run(turn.load(echo_port, clients, args.seconds)).rate
                plain = asyncio.run(turn.load(plain_port, clients, args.seconds)).rate
                metered, _ = asyncio.run(load_scraped(metered_port, clients, args.seconds))
                ratio = echo / plain if plain else float("inf")
                print(f"{clients:>8} {echo:>10.0f} {plain:>8.0f} {ratio:>10.1f}x {metered:>22.0f}")
        finally:
            for proc in (echo_proc, plain_proc, metered_proc):
                proc.terminate()
                proc.join(5)

    steps = tuple(s for s in (100, 500, 1000, 2000, 5000, 10000) if s <= args.tenants)
    print("\ntenants served (one first turn each) vs memory, one process")
    print(f"{'tenants':>8} {'RSS MiB':>8} {'disk MiB':>9} {'first turns/s':>14}")
    for n, rss, disk, rate in asyncio.run(tenants_vs_rss(args.tenants, steps)):
        print(f"{n:>8} {rss:>8.1f} {disk:>9.1f} {rate:>14.0f}")


if __name__ == "__main__":
    main()
