"""One tenant's slow or hanging runs hold no one else: runs go on in the background,
each once, within a per-tenant bound and a deadline; the loop's stop waits for them
or cancels them. Fake clock and sleep on real SQLite (`Harness`), a runner whose
`turn` runs hang until the test lets them go, and a sleep that moves the clock no
further than the test allows (then only a wake ends it)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.schedule.jobs import Job
from bridge.types.masked import Masked
from tests.masking import m
from tests.schedule.test_scheduler import Harness, harness
from tests.storage.test_job_store import MIN, T0
from tests.waits import until


class Hanging:
    """`run_job`: a `turn` waits for `release` (the first `hang` calls only); anything
    else is the harness's quick run."""

    def __init__(self, h: Harness, hang: int = 1_000) -> None:
        self.h, self.hang = h, hang
        self.release = asyncio.get_running_loop().create_future()
        self.calls: list[str] = []
        self.cancelled: list[str] = []

    async def __call__(self, job: Job, slot: int) -> Masked | None:
        if job.kind != "turn":
            return await self.h.run_job(job, slot)
        self.calls.append(job.id)
        if len(self.calls) > self.hang:
            return m("quick")
        try:
            await self.release
        except asyncio.CancelledError:
            self.cancelled.append(job.id)
            raise
        return m("the long answer")


class Ceiling:
    """The loop's sleep moves the fake clock at most to `limit`; a sleep past it waits
    for the loop's wake (a run ended, `stop()`) with the clock at `limit`."""

    def __init__(self, h: Harness, limit: int) -> None:
        self.h, self.limit = h, limit
        h.scheduler.sleep = self.sleep

    async def sleep(self, seconds: float) -> None:
        time = self.h.time
        time.sleeps.append(seconds)
        target = time.now + int(seconds * 1000)
        if target > self.limit:
            time.now = max(time.now, self.limit)
            await asyncio.get_running_loop().create_future()  # cancelled by a wake
        time.now = target
        await asyncio.sleep(0)


def time_up_to(h: Harness, limit: int) -> Ceiling:
    return Ceiling(h, limit)


async def add(h: Harness, tenant: str, kind: str, at: int, chat: str) -> str:
    job = await h.jobs.create(
        tenant=tenant, channel="telegram", chat=chat, kind=kind, spec="",
        payload=m(f"{tenant} {kind}"), tz="UTC", next_run_ms=at, created_ms=T0,
    )  # fmt: skip
    return job.id


@pytest.fixture
async def fast(tmp_path: Path) -> AsyncIterator[Harness]:
    """A harness whose loop ticks do not wait for the runs they start."""
    made = await harness(tmp_path / "roost.db", run_grace_ms=0)
    yield made
    await made.aclose()


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    made = await harness(tmp_path / "roost.db")
    yield made
    await made.aclose()


@pytest.fixture
async def brief(tmp_path: Path) -> AsyncIterator[Harness]:
    """A harness whose loop ticks wait 0.1 s for the runs they start, not 2 s: what a
    run that never ends costs the other jobs, kept short."""
    made = await harness(tmp_path / "roost.db", run_grace_ms=100)
    yield made
    await made.aclose()


async def stopped(h: Harness, loop: asyncio.Task[None]) -> None:
    h.scheduler.stop()
    await loop


async def test_a_hanging_turn_does_not_delay_another_tenants_reminder(brief: Harness) -> None:
    h = brief
    runner = Hanging(h)
    h.scheduler.run_job = runner
    alice = await add(h, "alice", "turn", T0, "1")
    await add(h, "bob", "reminder", T0 + MIN, "2")
    time_up_to(h, T0 + MIN)
    loop = asyncio.create_task(h.scheduler.run())
    await until(lambda: h.sent, "bob's reminder")
    assert h.sent == [("2", f"bob reminder @{T0 + MIN}")]
    assert h.sent_at == [T0 + MIN]  # on time, while alice's run still hangs
    assert runner.calls == [alice] and not runner.release.done()
    job = await h.jobs.get("alice", alice)
    assert job is not None and (job.runs, job.next_run_ms) == (0, T0)
    runner.release.set_result(None)
    await until(lambda: len(h.sent) == 2, "alice's answer")
    await stopped(h, loop)
    assert h.sent[1] == ("1", "the long answer")


async def test_a_run_under_way_is_not_started_again(fast: Harness) -> None:
    h = fast
    runner = Hanging(h)
    h.scheduler.run_job = runner
    alice = await add(h, "alice", "turn", T0, "1")
    for _ in range(3):
        await h.scheduler.tick(wait=False)
        h.time.now += MIN
    await until(lambda: runner.calls, "the run's start")
    assert runner.calls == [alice]
    runner.release.set_result(None)

    async def recorded() -> bool:
        job = await h.jobs.get("alice", alice)
        return job is not None and job.runs == 1

    await until(recorded, "the run's record")
    report = await h.scheduler.tick()
    assert (report.ran, report.delivered) == (1, 1)
    assert h.sent == [("1", "the long answer")] and runner.calls == [alice]


async def test_a_run_past_its_deadline_is_cancelled_and_recorded_as_failed(
    fast: Harness,
) -> None:
    h = fast
    runner = Hanging(h, hang=1)  # its retry answers at once
    h.scheduler.run_job = runner
    alice = await add(h, "alice", "turn", T0, "1")
    deadline = T0 + h.scheduler.config.run_deadline_ms
    time_up_to(h, deadline)
    loop = asyncio.create_task(h.scheduler.run())
    await until(lambda: [e for e in h.events if e.name == "job.failed"], "the failure's record")
    await stopped(h, loop)
    assert runner.cancelled == runner.calls == [alice]
    (failed,) = [e for e in h.events if e.name.startswith("job.")]
    assert (failed.name, failed.ref, failed.detail) == ("job.failed", alice, "RunTimeout")
    assert (failed.at_ms, failed.ms) == (deadline, deadline - T0)
    job = await h.jobs.get("alice", alice)
    assert job is not None and (job.state, job.fail_count) == ("active", 1)
    assert job.last_error == "RunTimeout: no result within 600 s"
    assert job.next_run_ms == deadline + MIN  # retried as a failed one-shot is


async def test_one_tenant_cannot_take_every_place(fast: Harness) -> None:
    h = fast
    runner = Hanging(h)
    h.scheduler.run_job = runner
    for k in range(4):  # as many hanging runs as the scheduler runs at once
        await add(h, "alice", "turn", T0, str(k))
    await add(h, "bob", "reminder", T0, "bob")
    time_up_to(h, T0)
    loop = asyncio.create_task(h.scheduler.run())
    await until(lambda: h.sent, "bob's reminder")
    assert h.sent == [("bob", f"bob reminder @{T0}")]
    assert len(runner.calls) == h.scheduler.config.tenant_runs == 2
    runner.release.set_result(None)
    await until(lambda: len(h.sent) == 5, "alice's four answers")
    await stopped(h, loop)
    assert len(runner.calls) == 4


async def test_stop_waits_for_a_run_under_way(fast: Harness) -> None:
    h = fast
    runner = Hanging(h)
    h.scheduler.run_job = runner
    alice = await add(h, "alice", "turn", T0, "1")
    time_up_to(h, T0)
    loop = asyncio.create_task(h.scheduler.run())
    await until(lambda: runner.calls, "the run's start")
    h.scheduler.stop()
    runner.release.set_result(None)
    await loop
    assert runner.cancelled == []
    job = await h.jobs.get("alice", alice)
    assert job is not None and (job.state, job.runs) == ("done", 1)


async def test_a_cancelled_loop_cancels_its_runs_and_records_nothing(fast: Harness) -> None:
    h = fast
    runner = Hanging(h)
    h.scheduler.run_job = runner
    alice = await add(h, "alice", "turn", T0, "1")
    time_up_to(h, T0)
    loop = asyncio.create_task(h.scheduler.run())
    await until(lambda: runner.calls, "the run's start")
    loop.cancel()  # the daemon's stop grace ran out
    with contextlib.suppress(asyncio.CancelledError):
        await loop
    assert runner.cancelled == [alice]
    job = await h.jobs.get("alice", alice)
    assert job is not None  # still due with the same slot: it runs after the restart
    assert (job.state, job.runs, job.fail_count, job.next_run_ms) == ("active", 0, 0, T0)
    assert not [e for e in h.events if e.name.startswith("job.")]


async def test_a_run_whose_record_failed_is_not_run_again_at_once(h: Harness) -> None:
    job_id = await h.add(at=T0)
    mark_run = h.jobs.mark_run
    calls: list[int] = []

    async def broken_once(*args: object, **kw: object) -> bool:
        calls.append(h.time.now)
        if len(calls) == 1:
            raise ConnectionError("the database is away")
        return await mark_run(*args, **kw)  # type: ignore[arg-type]

    h.jobs.mark_run = broken_once  # type: ignore[method-assign]
    later = T0 + h.scheduler.config.max_sleep_ms
    ceiling = time_up_to(h, T0)
    loop = asyncio.create_task(h.scheduler.run())
    await until(lambda: calls, "the first record")
    ceiling.limit = later  # time may go on now
    h.scheduler.wake()
    await until(lambda: len(calls) == 2, "the second record")
    await stopped(h, loop)
    assert calls == [T0, later]  # not at once: after max_sleep_ms, as a failed tick was
    assert h.ran == [(job_id, T0), (job_id, T0)] and len(h.sent) == 1
