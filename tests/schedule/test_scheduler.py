"""The scheduler with a fake clock on real SQLite, and a real kill -9 between run and delivery."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.schedule.jobs import Job, JobLimits, JobStore
from bridge.schedule.outbox import DeliveryError, OutboxEntry, OutboxStore
from bridge.schedule.scheduler import (
    ScheduleEvent,
    Scheduler,
    SchedulerConfig,
    plan_after_run,
    sleep_ms,
)
from bridge.storage.protocol import Database
from bridge.types.masked import Masked
from tests.masking import m
from tests.storage.test_job_store import HOUR, MIN, T0, next_run

ROOT = Path(__file__).resolve().parents[2]


class FakeTime:
    """The injected clock and sleep: sleeping moves the clock, nothing waits."""

    def __init__(self, now: int) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def clock(self) -> int:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += int(seconds * 1000)
        await asyncio.sleep(0)


class Harness:
    """Stores on one real database (the jobs and the outbox on one `Database`), a
    scheduler, and what it ran and delivered."""

    def __init__(self, database: Database, now: int = T0, **config: int) -> None:
        self.jobs = JobStore(database, next_run, JobLimits(min_interval_ms=MIN))
        self.outbox = OutboxStore(database)
        self.time = FakeTime(now)
        self.ran: list[tuple[str, int]] = []
        self.sent: list[tuple[str, str]] = []
        self.sent_at: list[int] = []
        self.events: list[ScheduleEvent] = []
        self.fail_runs: set[str] = set()
        self.fail_sends = 0
        self.scheduler = Scheduler(
            self.jobs,
            self.outbox,
            run_job=self.run_job,
            deliver=self.deliver,
            next_run=next_run,
            clock=self.time.clock,
            sleep=self.time.sleep,
            observe=self.observe,
            config=SchedulerConfig(**config),
        )

    async def run_job(self, job: Job, slot: int) -> Masked | None:
        self.ran.append((job.id, slot))
        if job.payload in self.fail_runs:
            raise RuntimeError("the model server is down")
        return None if job.payload == "quiet" else m(f"{job.payload} @{slot}")

    async def deliver(self, entry: OutboxEntry) -> None:
        if self.fail_sends:
            self.fail_sends -= 1
            raise ConnectionError("Bot API unreachable")
        self.sent.append((entry.chat, entry.text))
        self.sent_at.append(self.time.now)

    async def observe(self, event: ScheduleEvent) -> None:
        self.events.append(event)

    async def add(
        self, spec: str = "", payload: str = "bread", at: int = T0, chat: str = "42"
    ) -> str:
        job = await self.jobs.create(
            tenant="alice", channel="telegram", chat=chat, kind="reminder", spec=spec,
            payload=m(payload), tz="UTC", next_run_ms=at, created_ms=T0,
        )  # fmt: skip
        return job.id

    async def aclose(self) -> None:
        await self.outbox.db.aclose()


async def harness(path: Path, now: int = T0, **config: int) -> Harness:
    return Harness(await open_database(path), now, **config)


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    made = await harness(tmp_path / "roost.db")
    yield made
    await made.aclose()


async def test_a_due_reminder_is_run_once_and_delivered_once(h: Harness) -> None:
    job_id = await h.add(at=T0 + 2000)
    await h.scheduler.tick()
    assert h.ran == [] and h.sent == []  # not yet
    h.time.now = T0 + 2000
    report = await h.scheduler.tick()
    assert (report.ran, report.delivered) == (1, 1)
    assert h.sent == [("42", f"bread @{T0 + 2000}")]
    await h.scheduler.tick()
    assert len(h.sent) == 1
    job = await h.jobs.get("alice", job_id)
    assert job is not None and job.state == "done"


async def test_a_job_missed_for_ten_slots_runs_once(h: Harness) -> None:
    job_id = await h.add(spec=f"every {HOUR}", at=T0 + HOUR)
    h.time.now = T0 + 10 * HOUR + 5 * MIN  # the daemon was down for ten slots
    await h.scheduler.tick()
    await h.scheduler.tick()
    assert h.ran == [(job_id, T0 + HOUR)]
    assert len(h.sent) == 1
    job = await h.jobs.get("alice", job_id)
    assert job is not None and job.next_run_ms == T0 + 11 * HOUR


async def test_the_loop_runs_a_recurring_job_three_times_and_sleeps_until_due(h: Harness) -> None:
    job_id = await h.add(spec=f"every {HOUR}", at=T0 + HOUR)

    async def watch() -> None:
        while len(h.sent) < 3:
            await asyncio.sleep(0)
        h.scheduler.stop()

    await asyncio.gather(h.scheduler.run(), watch())
    assert h.ran == [(job_id, T0 + k * HOUR) for k in (1, 2, 3)]
    assert [text for _, text in h.sent] == [f"bread @{T0 + k * HOUR}" for k in (1, 2, 3)]
    assert max(h.time.sleeps) == 30  # capped
    assert h.sent_at == [T0 + k * HOUR for k in (1, 2, 3)]  # woke at each slot, never late


async def test_a_failing_run_is_recorded_and_others_still_run(h: Harness) -> None:
    bad = await h.add(spec=f"every {HOUR}", payload="broken", at=T0)
    good = await h.add(payload="bread", at=T0, chat="7")
    h.fail_runs.add("broken")
    report = await h.scheduler.tick()
    assert (report.ran, report.run_failures, report.delivered) == (2, 1, 1)
    job = await h.jobs.get("alice", bad)
    assert job is not None
    assert (job.fail_count, job.last_error) == (1, "RuntimeError: the model server is down")
    assert job.next_run_ms == T0 + HOUR  # on to its next slot
    assert {e.ref: e.name for e in h.events if e.name.startswith("job.")} == {
        bad: "job.failed",
        good: "job.run",
    }


async def test_an_unexpected_failure_is_logged_with_its_traceback_and_a_ref(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """The log had only the exception's class and the chat "an unexpected error on my
    side" with nothing to find it by (s35 newcomer N13): now the chat's notice names a
    ref, and the log line with that ref has the traceback."""
    await h.add(spec=f"every {HOUR}", payload="broken", at=T0)
    h.fail_runs.add("broken")

    class Notices:  # as runtime.JobRunner words a failure for its chat
        def failure_notice(self, job: Job, reason: str) -> Masked:
            return m(f"⚠️ job {job.id} failed: {reason}")

    h.scheduler.notices = Notices()
    with caplog.at_level("ERROR", logger="bridge.schedule.scheduler"):
        await h.scheduler.tick()
    ((_, notice),) = h.sent
    ref = re.search(r"an unexpected error on my side \(ref ([0-9a-f]{6})\)", notice)
    assert ref is not None, notice
    (record,) = [r for r in caplog.records if f"(ref {ref[1]})" in r.getMessage()]
    assert record.levelname == "ERROR" and record.exc_info is not None
    assert "the model server is down" in caplog.text  # the traceback's last line


async def test_a_recurring_job_failing_five_times_in_a_row_is_paused(h: Harness) -> None:
    job_id = await h.add(spec=f"every {HOUR}", payload="broken", at=T0)
    h.fail_runs.add("broken")
    for k in range(5):
        h.time.now = T0 + k * HOUR
        await h.scheduler.tick()
    job = await h.jobs.get("alice", job_id)
    assert job is not None and (job.state, job.fail_count) == ("paused", 5)
    h.time.now = T0 + 9 * HOUR
    await h.scheduler.tick()
    assert len(h.ran) == 5


async def test_a_failing_one_shot_retries_then_ends_with_its_error(h: Harness) -> None:
    job_id = await h.add(payload="broken", at=T0)
    h.fail_runs.add("broken")
    await h.scheduler.tick()
    job = await h.jobs.get("alice", job_id)
    assert job is not None and (job.state, job.next_run_ms) == ("active", T0 + MIN)
    h.time.now = T0 + MIN
    await h.scheduler.tick()
    job = await h.jobs.get("alice", job_id)
    assert job is not None and job.next_run_ms == T0 + 3 * MIN
    h.time.now = T0 + 3 * MIN
    await h.scheduler.tick()
    job = await h.jobs.get("alice", job_id)
    assert job is not None and (job.state, job.fail_count) == ("done", 3)
    assert job.last_error.startswith("RuntimeError")


async def test_a_run_with_nothing_to_say_posts_nothing(h: Harness) -> None:
    await h.add(spec=f"every {HOUR}", payload="quiet", at=T0)
    report = await h.scheduler.tick()
    assert (report.ran, report.delivered, h.sent) == (1, 0, [])


async def test_an_outage_delays_delivery_but_loses_nothing(h: Harness) -> None:
    await h.add(at=T0)
    h.fail_sends = 4  # four failed attempts: 5 s, 10 s, 20 s, 40 s of backoff

    async def watch() -> None:
        while not h.sent:
            await asyncio.sleep(0)
        h.scheduler.stop()

    await asyncio.gather(h.scheduler.run(), watch())
    assert h.sent == [("42", f"bread @{T0}")]
    assert h.sent_at == [T0 + 75_000]  # 5 + 10 + 20 + 40 s
    names = [e.name for e in h.events if e.name.startswith("outbox.")]
    assert names == ["outbox.failed"] * 4 + ["outbox.delivered"]
    assert all(e.detail == "ConnectionError" for e in h.events if e.name == "outbox.failed")


async def test_a_permanent_delivery_error_is_a_visible_dead_letter(h: Harness) -> None:
    async def blocked(entry: OutboxEntry) -> None:
        raise DeliveryError("forbidden", permanent=True)

    h.scheduler.deliver = blocked
    await h.add(at=T0)
    report = await h.scheduler.tick()
    assert report.delivery_failures == 1
    (dead,) = await h.outbox.failures("alice", "telegram", "42")
    assert (dead.state, dead.last_error) == ("dead", "forbidden")
    assert h.events[-1].name == "outbox.dead"


async def test_events_carry_ids_never_the_text(h: Harness) -> None:
    await h.add(payload="my secret diagnosis", at=T0)
    await h.scheduler.tick()
    assert h.events and all("secret" not in repr(e) for e in h.events)


async def test_wake_cuts_a_long_sleep_short(h: Harness) -> None:
    never = asyncio.get_running_loop().create_future()

    async def stuck(seconds: float) -> None:  # a sleep that only a wake ends
        h.time.sleeps.append(seconds)
        await never

    h.scheduler.sleep = stuck
    loop = asyncio.create_task(h.scheduler.run())
    while not h.time.sleeps:
        await asyncio.sleep(0)
    await h.add(at=T0)
    h.scheduler.wake()
    while not h.sent:
        await asyncio.sleep(0)
    h.scheduler.stop()
    await loop
    assert h.sent == [("42", f"bread @{T0}")]


async def test_an_error_in_a_tick_does_not_end_the_loop(h: Harness) -> None:
    await h.add(at=T0)
    await h.outbox.db.execute("ALTER TABLE outbox RENAME TO outbox_gone")  # every tick now fails
    h.time.sleeps.clear()

    async def fix_after_two_sleeps() -> None:
        while len(h.time.sleeps) < 2:
            await asyncio.sleep(0)
        await h.outbox.db.execute("ALTER TABLE outbox_gone RENAME TO outbox")
        while not h.sent:
            await asyncio.sleep(0)
        h.scheduler.stop()

    await asyncio.gather(h.scheduler.run(), fix_after_two_sleeps())
    assert h.sent == [("42", f"bread @{T0}")] and len(h.ran) >= 1


async def test_a_job_removed_while_it_ran_posts_nothing(h: Harness) -> None:
    job_id = await h.add(at=T0)
    run_job = h.scheduler.run_job

    async def removed_meanwhile(job: Job, slot: int) -> Masked | None:
        await h.jobs.remove(job.tenant, job.id)  # /job delete while the run was under way
        return await run_job(job, slot)

    h.scheduler.run_job = removed_meanwhile
    report = await h.scheduler.tick()
    assert report.ran == 1 and h.ran == [(job_id, T0)]
    assert h.sent == [] and await h.outbox.earliest_ms() is None


def test_sleep_is_until_the_earliest_wake_within_bounds() -> None:
    assert sleep_ms(T0, (None, None), 30_000) == 30_000
    assert sleep_ms(T0, (T0 + 7000, None), 30_000) == 7000
    assert sleep_ms(T0, (T0 + HOUR, T0 + 2000), 30_000) == 2000
    assert sleep_ms(T0, (T0 - 5000, T0 + 2000), 30_000) == 0


async def test_plan_after_run_collapses_missed_slots(h: Harness) -> None:
    job = await h.jobs.get("alice", await h.add(spec=f"every {HOUR}", at=T0 + HOUR))
    assert job is not None
    cfg = SchedulerConfig()
    assert plan_after_run(job, T0 + 10 * HOUR + 1, False, next_run, cfg) == (T0 + 11 * HOUR, False)


CHILD = """
import asyncio, os, signal, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from bridge.schedule.jobs import JobStore
from bridge.schedule.outbox import OutboxStore
from bridge.schedule.scheduler import Scheduler
from bridge.storage.sqlite import SqliteDatabase
from tests.storage.test_job_store import next_run
from tests.masking import m

path = Path({db!r})
marker = Path({marker!r})

class KilledBeforeTheRecord(JobStore):
    async def mark_run(self, *args, **kw):
        if {kill_in_mark}:  # the outbox entry is committed, the run not yet recorded
            marker.write_text("mark")
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().mark_run(*args, **kw)

async def run_job(job, slot):
    if {kill_in_run}:
        marker.write_text("ran")
        os.kill(os.getpid(), signal.SIGKILL)
    return m(job.payload)

async def deliver(entry):
    marker.write_text("deliver " + entry.key)
    os.kill(os.getpid(), signal.SIGKILL)

async def main():
    database = await SqliteDatabase.open(path)
    scheduler = Scheduler(KilledBeforeTheRecord(database, next_run), OutboxStore(database),
                          run_job=run_job, deliver=deliver, next_run=next_run,
                          clock=lambda: {now})
    await scheduler.tick()

asyncio.run(main())
"""


async def kill_during_tick(path: Path, kill_at: str) -> str:
    """Run a real scheduler process on the database and let it die by SIGKILL."""
    marker = path.with_name("marker")
    script = CHILD.format(root=str(ROOT), db=str(path), marker=str(marker), now=T0,
                          kill_in_run=kill_at == "run", kill_in_mark=kill_at == "mark")  # fmt: skip
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", script, cwd=ROOT)
    assert await child.wait() == -signal.SIGKILL
    return marker.read_text()


@pytest.mark.parametrize("kill_at", ["deliver", "run", "mark"])
async def test_kill_9_between_run_and_delivery_delivers_exactly_once(
    tmp_path: Path, kill_at: str
) -> None:
    """Killed while delivering, while running, or after the entry was stored and before
    the run was recorded (the outbox and the jobs commit separately): the message goes
    out exactly once, and the job ends done."""
    path = tmp_path / "roost.db"
    first = await harness(path)
    job_id = await first.add(payload="call the dentist", at=T0)
    await first.aclose()
    reached = await kill_during_tick(path, kill_at)
    assert reached == {"run": "ran", "mark": "mark"}.get(kill_at, f"deliver job:{job_id}:{T0}")

    restarted = await harness(path, now=T0 + 5 * MIN)  # past the lease of the dead claim
    try:
        for _ in range(3):
            await restarted.scheduler.tick()
            restarted.time.now += 5 * MIN
        # re-run after a kill in the run: the harness's own text, else the child's
        expected = "call the dentist @" + str(T0) if kill_at == "run" else "call the dentist"
        assert restarted.sent == [("42", expected)]
        job = await restarted.jobs.get("alice", job_id)
        assert job is not None and job.state == "done"
    finally:
        await restarted.aclose()
