"""Several instances on one PostgreSQL sharing one WhatsApp number: webhook turns/s for 1-3.

Prints, in one run on this machine (figures for docs/scaling.md), with real
`roost serve` processes on one home (`tests/cluster/kit.py`), a zero-latency
model (the fake OpenAI-compatible server, "echo: <question>") and the fake
WhatsApp Cloud API, each in its own process: turns/s through
`/whatsapp/webhook` (`--messages` signed deliveries of one text message, two
per person, posted round-robin to the instances by 16 posters; counted
answered when the fake Cloud API accepted the answer) for 1 instance on
SQLite (the single-instance path: answered where received) and 1, 2 and 3
on PostgreSQL (stored first, answered by the person's lease holder), with
PostgreSQL statements per turn (pg_stat_statements) and the busiest ones.

Run: `.venv/bin/python -m bench.whatsapp_instances [--quick]` (`--quick`: 90
messages per point). Needs PostgreSQL installed; without it, says so and
exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import time
from typing import Any

import aiohttp

from bench.instances import (
    SETUPS,
    _serve_bot_api,
    _serve_model,
    admin,
    launched,
    reset_stats,
    spawn,
    statement_counts,
    with_statement_stats,
)
from tests.cluster.kit import Cluster, Instance
from tests.fakes import whatsapp_payloads as hooks
from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.storage.pg_server import NoPostgres, PgServer, start_server
from tests.whatsapp.conftest import APP_SECRET
from tests.whatsapp.conftest import TOKEN as WA_TOKEN

FIRST = 491510000000


def _serve_meta(q: Any) -> None:
    async def main() -> None:
        async with FakeWhatsApp(WA_TOKEN, APP_SECRET) as server:
            q.put(str(server.port))
            await asyncio.Event().wait()

    asyncio.run(main())


async def accepted(meta: FakeWhatsApp, http: aiohttp.ClientSession) -> int:
    async with http.get(f"http://127.0.0.1:{meta.port}/_fake/sent") as r:
        return int((await r.json())["sent"])


async def webhook_load(
    cluster: Cluster, live: list[Instance], meta: FakeWhatsApp, count: int
) -> float:
    """Turns/s: `count` messages, two per person, round-robin, until all are answered."""
    people = count // 2
    bodies = [
        hooks.text(meta.phone_number_id, str(FIRST + n % people), f"w{n}")[1] for n in range(count)
    ]
    async with aiohttp.ClientSession() as http:
        before = await accepted(meta, http)
        start = time.perf_counter()
        todo = iter(enumerate(bodies))

        async def poster() -> None:
            for n, body in todo:
                status = await cluster.post_whatsapp(live[n % len(live)], body)
                assert status == 200, status

        await asyncio.gather(*(poster() for _ in range(16)))
        while True:  # polled: the fake is another process
            if await accepted(meta, http) - before >= count:
                break
            await asyncio.sleep(0.02)
        return count / (time.perf_counter() - start)


async def one_setup(
    server: PgServer,
    backend: str,
    instances: int,
    args: argparse.Namespace,
    urls: tuple[str, str, str],
) -> tuple[float, float, list[tuple[int, str]]]:
    """(turns/s, statements per turn, busiest statements)."""
    model_url, bot_url, meta_port = urls
    meta = FakeWhatsApp(WA_TOKEN, APP_SECRET)  # not started: the one in its process, signed alike
    meta.port = int(meta_port)
    name = f"bench_wa_{backend}_{instances}"
    async with launched(
        server,
        backend,
        instances,
        name,
        model_url=model_url,
        bot_api_url=bot_url,  # the kit's Telegram bot, idle here
        people=[],
        lease_s=args.lease_s,
        whatsapp=meta,
        whatsapp_people=[str(FIRST + n) for n in range(max(args.messages // 2, 10))],
    ) as (cluster, live, url):
        await webhook_load(cluster, live, meta, 10)  # warm: first turns, prepared statements
        await reset_stats(server)
        rate = await webhook_load(cluster, live, meta, args.messages)
        busiest = await statement_counts(server, name) if url else []
    return rate, sum(c for c, _ in busiest) / args.messages, busiest


async def run(args: argparse.Namespace) -> int:
    try:
        server = start_server()
    except NoPostgres as exc:
        print(f"bench.whatsapp_instances: skipped, PostgreSQL is not installed ({exc})")
        return 0
    model_proc, model_url = spawn(_serve_model)
    bot_proc, bot_url = spawn(_serve_bot_api)
    meta_proc, meta_port = spawn(_serve_meta)
    try:
        with_statement_stats(server)
        await admin(server, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        rows = []
        for label, backend, n in SETUPS:
            rate, per_turn, busiest = await one_setup(
                server, backend, n, args, (model_url, bot_url, meta_port)
            )
            rows.append((label, rate, per_turn if backend == "postgresql" else None, busiest))
            print(f"  ... {label} done", flush=True)
        print(f"\nWhatsApp webhook turns/s, zero-latency model ({args.messages} messages)")
        print(f"{'instances':<18} {'turns/s':>8} {'stmts/turn':>11}")
        for label, rate, per_turn, _ in rows:
            stmts = f"{per_turn:.1f}" if per_turn is not None else "-"
            print(f"{label:<18} {rate:>8.1f} {stmts:>11}")
        print(f"\nbusiest statements of {rows[-1][0]} (calls per turn):")
        for calls, query in rows[-1][3][:10]:
            print(f"  {calls / args.messages:6.2f}  {query[:110]}")
    finally:
        server.remove()
        for proc in (model_proc, bot_proc, meta_proc):
            proc.kill()
            proc.join()
    return 0


def main() -> None:
    mp.set_start_method("spawn", force=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=600, help="webhook messages per point")
    parser.add_argument("--lease-s", type=float, default=2.0)
    parser.add_argument("--quick", action="store_true", help="90 messages per point")
    args = parser.parse_args()
    if args.quick:
        args.messages = 90
    raise SystemExit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
