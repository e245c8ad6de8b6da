"""The scheduler: decides what is due, runs it, and delivers the outbox.

`tick()` runs every due job once, concurrently up to a bound, stores what a
run posts in the outbox (key `job:<id>:<slot>`), then commits the run's
outcome; then it claims due outbox entries and hands them to `deliver`.
A job missed while the daemon was down is due once: its next slot is asked of
`next_run` after *now*, so the missed slots collapse into one run (systemd's
Persistent=). A failing `run_job` or `deliver` is recorded on the job or
entry and never stops the loop.

`run()` loops: tick, then sleep until the earliest job slot or outbox due
time (at most `max_sleep_ms`), or until `wake()` (a job was created). The
clock (ms since the epoch) and the sleep are injected, so tests and the
benchmark drive time themselves. Kill -9 anywhere leaves a consistent state:
the entry is stored before the run is recorded (the outbox entry and the
job's run are two transactions), so before the run's commit the job is
still due with the same slot (it runs again, and the same key keeps a
second message out); after it, the entry
waits in the outbox. A job removed while it ran posts nothing (checked
before the entry is stored; a removal between that check and the run's
record lets its one last message out).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bridge.schedule.jobs import Job, JobStore, NextRun
from bridge.schedule.outbox import DeliveryError, OutboxEntry, OutboxStore, backoff_ms
from bridge.types.masked import Masked

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Post:
    """What a run posts, with the digest to remember for "post only on change"
    (stored with the run, after its outbox entry)."""

    text: Masked  # through the tenant's masker: the outbox takes nothing else
    digest: str = ""


class JobSkipped(Exception):
    """A run that could not happen (the person is no longer admitted, the tool is
    gone): recorded on the job like a failure, reported with outcome `skipped`."""


# (job, slot_ms) -> what to post, or None for nothing
RunJob = Callable[[Job, int], Awaitable[Masked | Post | None]]
Deliver = Callable[[OutboxEntry], Awaitable[None]]  # raises (DeliveryError) when not delivered
Clock = Callable[[], int]  # ms since the epoch, UTC
Sleep = Callable[[float], Awaitable[None]]  # seconds, as asyncio.sleep


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    max_sleep_ms: int = 30_000
    job_batch: int = 100
    outbox_batch: int = 50
    concurrency: int = 4  # job runs (and deliveries) at once
    retry_base_ms: int = 60_000  # a failed one-shot retries after 1 min, 2 min ...
    one_shot_attempts: int = 3  # ... and is done (error kept) after this many
    pause_after_failures: int = 5  # consecutive failures that park a recurring job


@dataclass(frozen=True, slots=True)
class ScheduleEvent:
    """What happened, for the audit chain: ids, times and error kinds, never text."""

    name: str  # job.run | job.failed | outbox.delivered | outbox.failed | outbox.dead
    tenant: str
    ref: str  # the job id or the outbox entry id
    at_ms: int
    detail: str = ""  # the error kind, or the job's next state
    kind: str = ""  # the job's kind; for outbox events the channel
    ms: int = 0  # how long the run took
    late_ms: int = 0  # run start (or delivery) minus the slot (or enqueue time)
    attempts: int = 0  # delivery attempts so far (outbox events)
    skipped: bool = False  # the run raised JobSkipped


@dataclass(frozen=True, slots=True)
class TickReport:
    ran: int
    run_failures: int
    delivered: int
    delivery_failures: int
    more: bool  # a batch was full: tick again without sleeping


Observe = Callable[[ScheduleEvent], Awaitable[None]]


def plan_after_run(
    job: Job, now_ms: int, failed: bool, next_run: NextRun, config: SchedulerConfig
) -> tuple[int | None, bool]:
    """The job's next slot after a run at `now_ms` (None: done) and whether to pause it."""
    failures = job.fail_count + 1 if failed else 0
    if job.recurring:
        return next_run(job.spec, job.tz, now_ms), failures >= config.pause_after_failures > 0
    if failed and failures < config.one_shot_attempts:
        return now_ms + backoff_ms(failures, config.retry_base_ms, config.max_sleep_ms * 120), False
    return None, False


def sleep_ms(now_ms: int, wakes: tuple[int | None, ...], max_sleep_ms: int) -> int:
    """How long to sleep: until the earliest of `wakes`, within [0, max_sleep_ms]."""
    times = [t for t in wakes if t is not None]
    if not times:
        return max_sleep_ms
    return max(0, min(min(times) - now_ms, max_sleep_ms))


def job_key(job: Job, slot_ms: int) -> str:
    return f"job:{job.id}:{slot_ms}"


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Scheduler:
    def __init__(
        self,
        jobs: JobStore,
        outbox: OutboxStore,
        *,
        run_job: RunJob,
        deliver: Deliver,
        next_run: NextRun,
        clock: Clock,
        sleep: Sleep = asyncio.sleep,
        observe: Observe | None = None,
        config: SchedulerConfig | None = None,
    ) -> None:
        self.jobs, self.outbox = jobs, outbox
        self.run_job, self.deliver, self.next_run = run_job, deliver, next_run
        self.clock, self.sleep, self.observe = clock, sleep, observe
        self.config = config or SchedulerConfig()
        self._limit = asyncio.Semaphore(self.config.concurrency)
        self._wake = asyncio.Event()
        self._stopped = False

    async def tick(self) -> TickReport:
        due = await self.jobs.due(self.clock(), self.config.job_batch)
        runs = await asyncio.gather(*(self._run(job) for job in due))
        claimed = await self.outbox.claim(self.clock(), self.config.outbox_batch)
        sent = await asyncio.gather(*(self._send(entry) for entry in claimed))
        return TickReport(
            ran=len(runs),
            run_failures=runs.count(False),
            delivered=sent.count(True),
            delivery_failures=sent.count(False),
            more=len(due) == self.config.job_batch or len(claimed) == self.config.outbox_batch,
        )

    async def _run(self, job: Job) -> bool:
        slot = job.next_run_ms if job.next_run_ms is not None else self.clock()
        error: str | None = None
        result: Masked | Post | None = None
        skipped = False
        async with self._limit:
            started = self.clock()
            try:
                result = await self.run_job(job, slot)
            except Exception as exc:  # the job's failure, recorded on it
                log.warning("job %s/%s failed: %s", job.tenant, job.id, type(exc).__name__)
                error, skipped = _describe(exc), isinstance(exc, JobSkipped)
        now = self.clock()
        next_ms, pause = plan_after_run(job, now, error is not None, self.next_run, self.config)
        post = result if result is None or isinstance(result, Post) else Post(result)
        digest = ""
        if post is not None and post.text and await self.jobs.get(job.tenant, job.id) is not None:
            # first: a crash before the run's record re-runs the same slot, whose key
            # adds nothing the second time
            key = job_key(job, slot)
            await self.outbox.enqueue(job.tenant, job.channel, job.chat, post.text, key, now_ms=now)
            digest = post.digest
        await self.jobs.mark_run(
            job.tenant,
            job.id,
            ran_ms=now,
            next_run_ms=next_ms,
            error=error,
            pause=pause,
            digest=digest,
        )
        detail = error.split(":", 1)[0] if error else ("done" if next_ms is None else "")
        event = ScheduleEvent(
            "job.failed" if error else "job.run",
            job.tenant,
            job.id,
            now,
            "paused" if pause else detail,
            kind=job.kind,
            ms=max(0, now - started),
            late_ms=max(0, started - slot),
            skipped=skipped,
        )
        await self._emit(event)
        return error is None

    async def _send(self, entry: OutboxEntry) -> bool:
        async with self._limit:
            try:
                await self.deliver(entry)
            except DeliveryError as exc:
                failure: DeliveryError | None = exc
            except Exception as exc:  # an unexpected error: transient, by its type
                failure = DeliveryError(type(exc).__name__)
            else:
                failure = None
        now = self.clock()
        if failure is None:
            await self.outbox.delivered(entry.id, now)
            late = max(0, now - entry.created_ms)
            ref = str(entry.id)
            await self._emit(
                ScheduleEvent(
                    "outbox.delivered",
                    entry.tenant,
                    ref,
                    now,
                    kind=entry.channel,
                    late_ms=late,
                    attempts=entry.attempts,
                )
            )
            return True
        state = await self.outbox.failed(
            entry.id,
            failure.kind,
            now,
            permanent=failure.permanent,
            retry_after_ms=failure.retry_after_ms,
        )
        name = "outbox.dead" if state == "dead" else "outbox.failed"
        ref = str(entry.id)
        await self._emit(
            ScheduleEvent(
                name,
                entry.tenant,
                ref,
                now,
                failure.kind,
                kind=entry.channel,
                attempts=entry.attempts,
            )
        )
        return False

    async def _emit(self, event: ScheduleEvent) -> None:
        if self.observe is None:
            return
        try:
            await self.observe(event)
        except Exception:
            log.exception("schedule observer failed on %s", event.name)

    async def next_wake_ms(self) -> int:
        """Milliseconds until the loop has something to do (at most max_sleep_ms)."""
        wakes = (await self.jobs.earliest_ms(), await self.outbox.earliest_ms())
        return sleep_ms(self.clock(), wakes, self.config.max_sleep_ms)

    def wake(self) -> None:
        """Cut the current sleep short (a job was created or resumed)."""
        self._wake.set()

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    async def run(self) -> None:
        """Tick and sleep until `stop()`; an error in a tick is logged, never fatal."""
        while not self._stopped:
            try:
                more = (await self.tick()).more
                delay = 0 if more else await self.next_wake_ms()
            except Exception:
                log.exception("scheduler tick failed")
                delay = self.config.max_sleep_ms
            if not self._stopped:
                await self._pause(delay / 1000)

    async def _pause(self, seconds: float) -> None:
        if self._wake.is_set() or seconds <= 0:
            self._wake.clear()
            await asyncio.sleep(0)  # let others run between full batches
            return
        sleeper = asyncio.ensure_future(self.sleep(seconds))
        waker = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait((sleeper, waker), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, waker):
                task.cancel()
        self._wake.clear()
