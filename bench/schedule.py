"""Scheduler benchmark: 10,000 jobs across 1,000 tenants in a real SQLite file (the stores
on the `Database` protocol, as the daemon has them).

Prints (1) the CPU time the loop spends per idle minute (simulated: the
injected clock jumps by each requested sleep, so an hour of idling takes
milliseconds of wall time and every cycle of the loop is real work), and
(2) the lateness of due jobs with the real clock and asyncio.sleep over a
short bounded run: delivered-at minus due-at, p50 and p99, for reminders
spread over a few seconds on top of the 10,000 idle jobs, and (3) the same
lateness through the daemon's own wiring: a roost built in a temporary home
(real audit chain, offline model) with its `ScheduleLoop` (job runner, outbox,
audit events) delivering to a recording channel.

Run: .venv/bin/python -m bench.schedule [--due 200] [--spread-ms 3000] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from bridge.app.database import open_database
from bridge.loadout.mask import Masker
from bridge.schedule.jobs import Job, JobLimits, JobStore
from bridge.schedule.outbox import OutboxEntry, OutboxStore
from bridge.schedule.scheduler import Scheduler
from bridge.types.masked import Masked

PLAIN = Masker({})  # no vault: what a tenant without secrets gets

HOUR = 3_600_000
DAY = 24 * HOUR


def next_run(spec: str, tz: str, after_ms: int) -> int | None:
    """'every <ms> +<offset>': slots at offset + k * period (a stand-in for the parser)."""
    _, period_text, offset_text = spec.split(" ")
    period, offset = int(period_text), int(offset_text.lstrip("+"))
    return ((after_ms - offset) // period + 1) * period + offset


async def populate(jobs: JobStore, now_ms: int, tenants: int, per_tenant: int) -> float:
    """Daily and hourly jobs whose next slot is at least a day away; returns seconds taken.
    The first slot is one of the recurrence's own (off its grid, the gap to the next slot
    could be under the minimum interval: a LimitError)."""
    rng = random.Random(13)
    t = time.perf_counter()
    for tenant in range(tenants):
        for n in range(per_tenant):
            period = DAY if n % 2 else HOUR
            offset = rng.randrange(period)
            spec = f"every {period} +{offset}"
            first = next_run(spec, "UTC", now_ms + DAY)
            await jobs.create(
                tenant=f"t{tenant:04d}", channel="telegram", chat=str(tenant),
                kind="turn", spec=spec, payload=PLAIN.mask("briefing"), tz="UTC",
                next_run_ms=first, created_ms=now_ms,
            )  # fmt: skip
    return time.perf_counter() - t


async def idle_cpu(
    jobs: JobStore, outbox: OutboxStore, start_ms: int, minutes: int
) -> tuple[float, int]:
    """CPU seconds of `minutes` simulated idle minutes, and the loop's cycles in them."""
    clock = {"now": start_ms}
    sleeps = 0

    async def fake_sleep(seconds: float) -> None:
        nonlocal sleeps
        sleeps += 1
        clock["now"] += int(seconds * 1000)
        if clock["now"] >= start_ms + minutes * 60_000:
            scheduler.stop()
        await asyncio.sleep(0)

    async def never(job: Job, slot: int) -> str | None:
        raise AssertionError("no job is due in the idle hour")

    async def deliver(entry: OutboxEntry) -> None:
        raise AssertionError("nothing to deliver")

    scheduler = Scheduler(
        jobs, outbox, run_job=never, deliver=deliver, next_run=next_run,
        clock=lambda: clock["now"], sleep=fake_sleep,
    )  # fmt: skip
    cpu = time.process_time()
    await scheduler.run()
    return time.process_time() - cpu, sleeps


async def lateness(jobs: JobStore, outbox: OutboxStore, due: int, spread_ms: int) -> list[int]:
    def now_ms() -> int:
        return time.time_ns() // 1_000_000

    late: list[int] = []
    start = now_ms() + 200
    rng = random.Random(7)
    for n in range(due):
        at = start + rng.randrange(spread_ms)
        await jobs.create(
            tenant=f"t{n % 1000:04d}", channel="telegram", chat=f"r{n}", kind="reminder",
            spec="", payload=PLAIN.mask("bread"), tz="UTC", next_run_ms=at, created_ms=start,
        )  # fmt: skip
    by_key: dict[str, int] = {}

    async def run_job(job: Job, slot: int) -> Masked | None:
        by_key[f"job:{job.id}:{slot}"] = slot
        return PLAIN.mask(job.payload)

    async def deliver(entry: OutboxEntry) -> None:
        late.append(now_ms() - by_key[entry.key])
        if len(late) == due:
            scheduler.stop()

    scheduler = Scheduler(
        jobs, outbox, run_job=run_job, deliver=deliver, next_run=next_run, clock=now_ms
    )
    await asyncio.wait_for(scheduler.run(), timeout=spread_ms / 1000 + 30)
    return late


async def daemon_lateness(home: Path, due: int, spread_ms: int) -> list[int]:
    """Reminders through build() + ScheduleLoop: delivered-at minus due-at, ms."""
    import os

    from bridge.app.build import build
    from bridge.app.schedule_loop import ScheduleLoop, wall_ms
    from bridge.core.config import load_settings

    os.environ["ROOST_CONFIG"] = str(home / "empty.toml")  # written by main()
    settings = load_settings(home=home, llm={"provider": "offline"}, schedule={"max_jobs": due + 1})
    roost = await build(settings)
    loop = ScheduleLoop(roost)
    late: list[int] = []
    done = asyncio.Event()
    slots: dict[str, int] = {}

    async def record(entry: OutboxEntry) -> None:
        late.append(wall_ms() - slots[entry.key])
        if len(late) == due:
            done.set()

    loop.deliveries.add("web", record)
    rng = random.Random(11)
    start = wall_ms() + 300
    for n in range(due):
        at = start + rng.randrange(spread_ms)
        job = await roost.schedule.jobs.create(
            tenant="local", channel="web", chat=f"c{n % 50}", kind="reminder", spec="",
            payload=PLAIN.mask("bread"), tz="UTC", next_run_ms=at, created_ms=start,
        )  # fmt: skip
        slots[f"job:{job.id}:{at}"] = at
    loop.start()
    try:
        await asyncio.wait_for(done.wait(), spread_ms / 1000 + 30)
    finally:
        await loop.stop()
        await roost.aclose()
    return late


async def store_runs(
    path: Path, now: int, args: argparse.Namespace
) -> tuple[float, float, int, list[int]]:
    """Populate, the idle loop and the lateness runs, the stores on a `Database` of roost.db."""
    db = await open_database(path)
    try:
        jobs = JobStore(db, next_run, JobLimits(max_jobs=args.per_tenant + args.due))
        outbox = OutboxStore(db)
        took = await populate(jobs, now, args.tenants, args.per_tenant)
        cpu, ticks = await idle_cpu(jobs, outbox, now, args.idle_minutes)
        late = await lateness(jobs, outbox, args.due, args.spread_ms)
    finally:
        await db.aclose()
    return took, cpu, ticks, late


def pct(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tenants", type=int, default=1000)
    ap.add_argument("--per-tenant", type=int, default=10)
    ap.add_argument("--idle-minutes", type=int, default=60)
    ap.add_argument("--due", type=int, default=200)
    ap.add_argument("--spread-ms", type=int, default=3000)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = ap.parse_args()
    if args.quick:
        args.tenants, args.per_tenant, args.idle_minutes = 20, 5, 5
        args.due, args.spread_ms = 10, 200
    with tempfile.TemporaryDirectory() as tmp:
        now = time.time_ns() // 1_000_000
        took, cpu, ticks, late = asyncio.run(store_runs(Path(tmp) / "roost.db", now, args))
        total = args.tenants * args.per_tenant
        print(f"jobs: {total} across {args.tenants} tenants (created in {took:.2f} s)")
        per_min = cpu / args.idle_minutes * 1000
        cycle_us = cpu / ticks * 1e6
        print(f"idle: {ticks} loop cycles in {args.idle_minutes} simulated min,"
              f" CPU {per_min:.3f} ms per idle minute ({cycle_us:.0f} µs per cycle)")  # fmt: skip
        print(f"lateness of {len(late)} due reminders over {args.spread_ms} ms (real clock):"
              f" p50 {pct(late, 0.5)} ms, p99 {pct(late, 0.99)} ms, max {max(late)} ms,"
              f" mean {statistics.fmean(late):.1f} ms")  # fmt: skip
        home = Path(tmp) / "home"
        home.mkdir()
        (home / "empty.toml").write_text("")
        late = asyncio.run(daemon_lateness(home, args.due, args.spread_ms))
        print(
            f"through the daemon's wiring ({len(late)} reminders, audit chain on):"
            f" p50 {pct(late, 0.5)} ms, p99 {pct(late, 0.99)} ms, max {max(late)} ms"
        )


if __name__ == "__main__":
    main()
