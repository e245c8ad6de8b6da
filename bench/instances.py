"""Several instances on one PostgreSQL: turns/s for 1, 2 and 3 instances, takeover after SIGKILL.

Prints, in one run on this machine (figures go to docs/scaling.md), with
real `roost serve` processes on one home (`tests/cluster/kit.py`, the
harness of tests/cluster), a zero-latency model (the fake OpenAI-compatible
server, "echo: <question>", in its own process) and the fake Telegram Bot
API (its own process) in webhook mode:
1. turns/s through `POST /api/chat` (`--clients` clients, each on its own
   chat and instance) and through the Telegram webhook (`--updates`
   updates, two per person, posted round-robin to the instances by 16
   posters; counted answered when the update is marked done in the inbox)
   for 1, 2 and 3 instances on one PostgreSQL, next to one instance on
   SQLite. A webhook turn's answer goes through python-telegram-bot's send
   limiter (30 messages/s per instance, Telegram's limit per bot);
2. PostgreSQL statements per turn of each kind (pg_stat_statements, loaded
   into the throwaway server for this) and the busiest statements;
3. the time from SIGKILL of one of two instances, under a steady webhook
   load, to each of the chats it held being answered by the other
   (`--lease-s`, default 2 s; the production default is 15 s).

Run: `.venv/bin/python -m bench.instances [--quick]` (`--quick`: 1 s of
`/api/chat` per point and 90 webhook updates, the same tables in seconds).
Needs PostgreSQL installed (`make test` installs it); without it, says so
and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import sqlite3
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

from tests.cluster.kit import KEY, TOKEN, Cluster, Instance, private_message
from tests.storage.pg_server import NoPostgres, PgServer, start_server

SOURCE = f"telegram:{TOKEN.partition(':')[0]}"
FIRST_PERSON = 200_000


# -- the fakes, each in its own process (the load generator keeps this one busy) --------------


def _serve_model(q: Any) -> None:
    from tests.fakes.fake_openai import FakeOpenAI

    async def main() -> None:
        async with FakeOpenAI(api_key=KEY, models=["m1"]) as server:
            q.put(server.base_url)
            await asyncio.Event().wait()

    asyncio.run(main())


def _serve_bot_api(q: Any) -> None:
    from tests.telegram.fake_bot_api import FakeBotAPI

    async def main() -> None:
        async with FakeBotAPI(TOKEN) as server:
            q.put(server.base_url)
            await asyncio.Event().wait()

    asyncio.run(main())


def spawn(target: Callable[[Any], None]) -> tuple[Any, str]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=target, args=(q,), daemon=True)
    proc.start()
    return proc, str(q.get(timeout=120))


# -- PostgreSQL ---------------------------------------------------------------------------


def with_statement_stats(server: PgServer) -> None:
    """Load pg_stat_statements into the throwaway server (a restart)."""
    conf = server.data / "postgresql.conf"
    with conf.open("a") as fh:
        fh.write("\nshared_preload_libraries = 'pg_stat_statements'\n")
    server.stop()
    server.start()


async def admin(server: PgServer, sql: str, *args: Any) -> Any:
    conn = await asyncpg.connect(server.url())
    try:
        return await conn.fetch(sql, *args)
    finally:
        await conn.close()


async def new_database(server: PgServer, name: str) -> str:
    await admin(server, f'CREATE DATABASE "{name}"')
    return server.url(name)


async def reset_stats(server: PgServer) -> None:
    await admin(server, "SELECT pg_stat_statements_reset()")


async def statement_counts(server: PgServer, name: str) -> list[tuple[int, str]]:
    """(calls, statement) of database `name` since the last reset, busiest first."""
    rows = await admin(
        server,
        "SELECT s.calls, s.query FROM pg_stat_statements s JOIN pg_database d"
        " ON d.oid = s.dbid WHERE d.datname = $1 ORDER BY s.calls DESC",
        name,
    )
    return [(int(r["calls"]), " ".join(str(r["query"]).split())) for r in rows]


# -- loads --------------------------------------------------------------------------------


async def api_load(cluster: Cluster, live: list[Instance], clients: int, seconds: float) -> float:
    """Turns/s through POST /api/chat: client i on chat "bench<i>" of instance i % n."""
    done = 0
    stop_at = time.perf_counter() + seconds

    async def client(i: int) -> None:
        nonlocal done
        n = 0
        while time.perf_counter() < stop_at:
            reply = await cluster.chat(live[i % len(live)], f"bench{i}", f"hello {n}")
            assert reply.startswith("echo:"), reply
            done += 1
            n += 1

    start = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    return done / (time.perf_counter() - start)


def done_reader(cluster: Cluster, url: str | None) -> Callable[[], Awaitable[int]]:
    """How many updates the inbox has marked done (or dropped), on either backend."""
    if url is None:
        path = cluster.home / "roost.db"

        async def sqlite_done() -> int:
            with closing(sqlite3.connect(path, timeout=30)) as conn:
                (n,) = conn.execute(
                    "SELECT COUNT(*) FROM channel_inbox WHERE state IN ('done', 'dropped')"
                ).fetchone()
            return int(n)

        return sqlite_done

    async def pg_done() -> int:
        conn = await asyncpg.connect(url)
        try:
            return int(
                await conn.fetchval(
                    "SELECT COUNT(*) FROM channel_inbox WHERE state IN ('done', 'dropped')"
                )
            )
        finally:
            await conn.close()

    return pg_done


async def post_all(cluster: Cluster, live: list[Instance], updates: list[dict[str, Any]]) -> None:
    """Post `updates` round-robin to the instances, 16 at a time; each must be taken (200)."""
    todo = iter(enumerate(updates))

    async def poster() -> None:
        for n, update in todo:
            status = await cluster.post_update(live[n % len(live)], update)
            assert status == 200, status

    await asyncio.gather(*(poster() for _ in range(16)))


async def webhook_load(
    cluster: Cluster, live: list[Instance], url: str | None, count: int, first_id: int
) -> float:
    """Turns/s through the webhook: `count` updates, two per person, until all are done."""
    people = count // 2
    updates = [
        private_message(first_id + n, FIRST_PERSON + n % people, f"w{n}", 10_000 + first_id + n)
        for n in range(count)
    ]
    done = done_reader(cluster, url)
    before = await done()
    start = time.perf_counter()
    await post_all(cluster, live, updates)
    while True:  # polled: the inbox is another process's
        if await done() - before >= count:
            break
        await asyncio.sleep(0.02)
    return count / (time.perf_counter() - start)


async def takeover(cluster: Cluster, live: list[Instance], url: str, rate: float) -> list[float]:
    """Seconds from SIGKILL of live[0] (under a steady webhook load) to each chat it held
    being answered by another instance."""
    victim, survivor = live
    people = 40
    stop = asyncio.Event()
    sent = 0

    dead = asyncio.Event()

    async def steady() -> None:
        nonlocal sent
        while not stop.is_set():
            target = victim if not dead.is_set() and sent % 2 == 0 else survivor
            n = 100_000 + sent
            update = private_message(n, FIRST_PERSON + sent % people, f"k{sent}", n)
            try:
                status = await cluster.post_update(target, update)
            except aiohttp.ClientError:  # the victim died under it: the balancer retries
                status = await cluster.post_update(survivor, update)
            assert status == 200, status
            sent += 1
            await asyncio.sleep(1 / rate)

    load = asyncio.create_task(steady())
    conn = await asyncpg.connect(url)
    try:
        held: list[str] = []
        looks = 0
        while len(held) < 3 and not (held and looks > 100):  # the victim holds chats now
            await asyncio.sleep(0.02)
            looks += 1
            rows = await conn.fetch(
                "SELECT name FROM storage_leases WHERE name LIKE 'chat:%' AND owner LIKE $1",
                f"{victim.name}:%",
            )
            held = [str(r["name"]).rsplit(":", 1)[1] for r in rows]
        dead.set()
        victim.proc.kill()
        killed_ms = int(await conn.fetchval("SELECT (extract(epoch FROM now()) * 1000)::bigint"))
        killed = time.perf_counter()
        await victim.proc.wait()
        back: dict[str, float] = {}
        while len(back) < len(held):
            rows = await conn.fetch(
                "SELECT DISTINCT chat FROM channel_inbox WHERE chat = ANY($1::text[])"
                " AND state = 'done' AND owner NOT LIKE $2 AND done_ms > $3",
                held,
                f"{victim.name}:%",
                killed_ms,
            )
            for r in rows:
                back.setdefault(str(r["chat"]), time.perf_counter() - killed)
            await asyncio.sleep(0.02)
    finally:
        stop.set()
        await load
        await conn.close()
    return sorted(back.values())


# -- the run ------------------------------------------------------------------------------


SETUPS = [("1 on SQLite", "sqlite", 1)] + [
    (f"{n} on PostgreSQL", "postgresql", n) for n in (1, 2, 3)
]


@asynccontextmanager
async def launched(
    server: PgServer, backend: str, instances: int, name: str, **options: Any
) -> AsyncIterator[tuple[Cluster, list[Instance], str | None]]:
    """`instances` of a new home (on a new PostgreSQL database `name`, or SQLite),
    launched at once; stopped, then killed if need be, at the end."""
    with tempfile.TemporaryDirectory(prefix=f"roost-{name}-") as tmp:
        url = await new_database(server, name) if backend == "postgresql" else None
        cluster = Cluster(Path(tmp), db_url=url, **options)
        try:
            live = list(await asyncio.gather(*(cluster.launch(f"i{n}") for n in range(instances))))
            yield cluster, live, url
            for inst in live:
                await cluster.stop(inst)
        finally:
            await cluster.aclose()


async def one_setup(
    server: PgServer,
    label: str,
    backend: str,
    instances: int,
    args: argparse.Namespace,
    fakes: tuple[str, str],
) -> tuple[str, float, float, dict[str, float], list[tuple[int, str]]]:
    """(label, api turns/s, webhook turns/s, statements per turn by kind, busiest)."""
    model_url, bot_url = fakes
    people = [FIRST_PERSON + n for n in range(max(args.updates // 2, 40))]
    name = f"bench_{backend}_{instances}"
    per_turn: dict[str, float] = {}
    async with launched(
        server,
        backend,
        instances,
        name,
        model_url=model_url,
        bot_api_url=bot_url,
        people=people,
        lease_s=args.lease_s,
    ) as (cluster, live, url):
        await api_load(cluster, live, 2, 0.3)  # warm: first turns, prepared statements
        await reset_stats(server)
        api = await api_load(cluster, live, args.clients, args.seconds)
        api_turns = api * args.seconds
        api_calls = sum(c for c, _ in await statement_counts(server, name)) if url else 0
        await reset_stats(server)
        hook = await webhook_load(cluster, live, url, args.updates, 1)
        busiest = await statement_counts(server, name) if url else []
        if url:
            per_turn["api"] = api_calls / max(api_turns, 1)
            per_turn["webhook"] = sum(c for c, _ in busiest) / args.updates
    return label, api, hook, per_turn, busiest


async def run(args: argparse.Namespace) -> int:
    try:
        server = start_server()
    except NoPostgres as exc:
        print(f"bench.instances: skipped, PostgreSQL is not installed ({exc})")
        return 0
    model_proc, model_url = spawn(_serve_model)
    bot_proc, bot_url = spawn(_serve_bot_api)
    try:
        with_statement_stats(server)
        await admin(server, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        setups = SETUPS
        rows = []
        for label, backend, n in setups:
            rows.append(await one_setup(server, label, backend, n, args, (model_url, bot_url)))
            print(f"  ... {label} done", flush=True)
        print(
            f"\nturns/s, zero-latency model ({args.clients} /api/chat clients for "
            f"{args.seconds:g} s; {args.updates} webhook updates, two per person)"
        )
        print(
            f"{'instances':<18} {'/api/chat':>10} {'webhook':>9} {'stmts/turn api':>15} "
            f"{'stmts/turn webhook':>19}"
        )
        for label, api, hook, per_turn, _ in rows:
            api_s = f"{per_turn['api']:.1f}" if "api" in per_turn else "-"
            hook_s = f"{per_turn['webhook']:.1f}" if "webhook" in per_turn else "-"
            print(f"{label:<18} {api:>10.1f} {hook:>9.1f} {api_s:>15} {hook_s:>19}")
        busiest = rows[-1][4]
        print(f"\nbusiest statements, webhook phase of {rows[-1][0]} (calls per turn):")
        for calls, query in busiest[:10]:
            print(f"  {calls / args.updates:6.2f}  {query[:110]}")

        with tempfile.TemporaryDirectory(prefix="roost-takeover-") as tmp:
            url = await new_database(server, "bench_takeover")
            cluster = Cluster(
                Path(tmp),
                db_url=url,
                model_url=model_url,
                bot_api_url=bot_url,
                people=[FIRST_PERSON + n for n in range(40)],
                lease_s=args.lease_s,
            )
            try:
                live = list(await asyncio.gather(cluster.launch("i0"), cluster.launch("i1")))
                back = await takeover(cluster, live, url, args.kill_rate)
            finally:
                await cluster.aclose()
        print(
            f"\nSIGKILL of one of two instances ({args.kill_rate:g} webhook updates/s over 40 "
            f"people, lease_s {args.lease_s:g} s): its {len(back)} chats answered again after "
            f"median {statistics.median(back):.2f} s, max {max(back):.2f} s"
        )
    finally:
        server.remove()
        for proc in (model_proc, bot_proc):
            proc.kill()
            proc.join()
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="/api/chat load per point")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--updates", type=int, default=600, help="webhook updates per point")
    parser.add_argument("--lease-s", type=float, default=2.0)
    parser.add_argument("--kill-rate", type=float, default=40.0, help="webhook updates/s")
    parser.add_argument("--quick", action="store_true", help="1 s per point, 90 updates")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.updates = 1.0, 90
    raise SystemExit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
