"""The scheduler: decides what is due, runs it, and delivers the outbox.

`tick()` starts every due job once, concurrently up to a bound, stores what a
run posts in the outbox (key `job:<id>:<slot>`), then commits the run's
outcome; then it claims due outbox entries and hands them to `deliver`.
A job missed while the daemon was down is due once: its next slot is asked of
`next_run` after *now*, so the missed slots collapse into one run (systemd's
Persistent=). A failing `run_job` or `deliver` is recorded on the job or
entry and never stops the loop. A run that fails with `JobFailed` also posts
its notice (under the run's key) on the job's first failure, not again while
it keeps failing (`told`); one whose job can never succeed (`pause`) pauses the job.
A run cancelled at its deadline, or failing with any other error, is told on the
same terms in the words of a `run_job` that gives them (`FailureNotices`: the
daemon's `JobRunner`, nothing for a reminder).

Runs are tasks of their own, tracked by (tenant, job id): a job whose run is
under way is not started again (nor one whose run ended while the due jobs
were being read), at most `tenant_runs` runs of one tenant go at once (its
other due jobs wait for a later tick), and deliveries have their own bound, so
one tenant's slow or hanging runs never hold another tenant's reminder. A run
still going `run_deadline_ms` (by the injected clock) after it started is
cancelled at the next tick and recorded as failed (`RunTimeout`), the way a
failing `run_job` is; a run whose record could not be written (the database
away) is not started again before `max_sleep_ms`. `tick()` itself waits for
the runs it started (at most `run_deadline_ms` of the event loop's time; tests
and one-shot callers see their outcome); the loop's ticks wait at most
`run_grace_ms` (the event loop's time) for them, so a quick run's message
leaves in the same tick, and a longer run goes on in the background and wakes
the loop when it ends.

`run()` loops: tick, then sleep until the earliest job slot (of a job not
running), outbox due time or run deadline (at most `max_sleep_ms`), or until
`wake()` (a job was created, a run ended). The clock (ms since the epoch)
and the sleep are injected, so tests and the benchmark drive time
themselves. When `run()` is stopped it waits for the runs in flight; when it
is cancelled (the daemon's stop grace ran out) it cancels them: a cancelled
run records nothing, so its job is still due with the same slot. Kill -9
anywhere leaves a consistent state:
the entry is stored before the run is recorded (the outbox entry and the
job's run are two transactions), so before the run's commit the job is
still due with the same slot (it runs again, and the same key keeps a
second message out); after it, the entry
waits in the outbox. A job removed while it ran posts nothing (checked
before the entry is stored; a removal between that check and the run's
record lets its one last message out).

Every delivery masks once more: an entry's text was masked with the
tenant's masker of when it was queued, so a value vaulted since (before a
retry, or while the daemon was down) would go out in clear. Right before
`deliver` is called, the entry's text passes `masks(tenant)`, the masker of
now, in this one place for every channel; the channel lays its parts out
from that text (`bridge.schedule.outbox_parts`: what it sends, edits into a
draft or compares is the re-masked text). `masks` is given by the
composition root, or taken from a `run_job` that knows each tenant's
masker (`TenantMasks`: the daemon's `JobRunner`). A masker that cannot be
had (the vault unreadable) fails the attempt: it is retried, never sent
unmasked.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from bridge.schedule.jobs import Job, JobStore, NextRun
from bridge.schedule.outbox import DeliveryError, OutboxEntry, OutboxStore, backoff_ms
from bridge.types.masked import Masked, TextMask

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Post:
    """What a run posts, with the digest to remember for "post only on change"
    (stored with the run, after its outbox entry)."""

    text: Masked  # through the tenant's masker: the outbox takes nothing else
    digest: str = ""


class JobFailed(Exception):
    """A run's failure, recorded on the job as `cause` (default: the exception as
    `_describe` writes it, e.g. "ToolError: …"). `notice` (masked), if any, is what
    the person is told in the job's chat: it goes to the outbox under the run's key
    on the job's first failure only (none after a success or since it was made),
    so a job that keeps failing is not announced at every run. `pause`: the job can
    never succeed as it is (its tool is gone): it is paused, and the notice always
    goes (once per pause: a resumed job that fails so again is paused again)."""

    def __init__(
        self, message: str, notice: Masked | None = None, *, pause: bool = False, cause: str = ""
    ) -> None:
        super().__init__(message)
        self.notice, self.pause, self.cause = notice, pause, cause


class JobSkipped(JobFailed):
    """A run that could not happen (the person is no longer admitted, the tool is
    gone): recorded on the job like a failure, reported with outcome `skipped`."""


# (job, slot_ms) -> what to post, or None for nothing
RunJob = Callable[[Job, int], Awaitable[Masked | Post | None]]
Deliver = Callable[[OutboxEntry], Awaitable[None]]  # raises (DeliveryError) when not delivered
Clock = Callable[[], int]  # ms since the epoch, UTC
Sleep = Callable[[float], Awaitable[None]]  # seconds, as asyncio.sleep
Masks = Callable[[str], TextMask]  # tenant -> its masker of now (the vault as it is)


@runtime_checkable
class TenantMasks(Protocol):
    """A `run_job` that knows each tenant's masker of now (`runtime.JobRunner`): a
    scheduler given no `masks` masks its deliveries with it."""

    def masker_for(self, tenant: str) -> TextMask: ...


@runtime_checkable
class FailureNotices(Protocol):
    """A `run_job` that words a job's failure for its chat (`runtime.JobRunner`): a run
    cancelled at its deadline, or failing with an unexpected error, is told with it
    (masked; None: nothing to tell, e.g. a reminder), on the same terms as `JobFailed`."""

    def failure_notice(self, job: Job, reason: str) -> Masked | None: ...


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    max_sleep_ms: int = 30_000
    job_batch: int = 100
    outbox_batch: int = 50
    concurrency: int = 4  # job runs at once (and, apart from them, deliveries at once)
    tenant_runs: int = 2  # runs of one tenant under way at once (its others wait a tick)
    run_deadline_ms: int = 10 * 60_000  # a run still going then is cancelled: failed
    run_grace_ms: int = 2_000  # how long a loop tick waits for its runs (event-loop time)
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


FAR_MS = 1 << 62  # after every slot: `due(FAR_MS, n)` is the n earliest active jobs
RunKey = tuple[str, str]  # (tenant, job id)


class RunTimeout(Exception):
    """A run cancelled at its deadline; recorded on the job like any failure."""


@dataclass(slots=True)
class _Running:
    """One run under way: its task, and (once it holds a place) its call and start."""

    tenant: str
    task: asyncio.Task[bool] | None = None
    call: asyncio.Future[Masked | Post | None] | None = None
    started_ms: int | None = None
    overdue: bool = False


def masks_of(run_job: RunJob) -> Masks | None:
    """The tenant maskers a `run_job` knows (`TenantMasks`), or None."""
    return run_job.masker_for if isinstance(run_job, TenantMasks) else None


def told(job: Job, notice: Masked | None, pause: bool) -> Post | None:
    """The notice a failed run posts: on the job's first failure (none since its last
    success or since it was made), or whenever the failure pauses it; else nothing."""
    return Post(notice) if notice is not None and (pause or job.fail_count == 0) else None


def in_words(ms: int) -> str:
    """A run deadline in plain words: '10 minutes', '90 s'."""
    if ms >= 60_000 and ms % 60_000 == 0:
        minutes = ms // 60_000
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{ms / 1000:g} s"


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
        masks: Masks | None = None,
    ) -> None:
        self.jobs, self.outbox = jobs, outbox
        self.run_job, self.deliver, self.next_run = run_job, deliver, next_run
        # each delivery's text through the tenant's masker of now (None: as stored)
        self.masks = masks if masks is not None else masks_of(run_job)
        self.notices: FailureNotices | None = (
            run_job if isinstance(run_job, FailureNotices) else None
        )
        self.clock, self.sleep, self.observe = clock, sleep, observe
        self.config = config or SchedulerConfig()
        self._limit = asyncio.Semaphore(self.config.concurrency)  # runs
        self._send_limit = asyncio.Semaphore(self.config.concurrency)  # deliveries
        self._wake = asyncio.Event()
        self._stopped = False
        self._runs: dict[RunKey, _Running] = {}  # under way (or waiting for a place)
        self._ended: set[RunKey] = set()  # runs ended since the due jobs were last read
        self._held: dict[RunKey, int] = {}  # runs whose record failed: not again before
        self._outcomes: list[bool] = []  # runs ended since the last report (True: ok)

    async def tick(self, *, wait: bool = True) -> TickReport:
        """Start the due runs, then deliver; `wait`: until the runs started end (else
        at most `run_grace_ms`: the loop's ticks)."""
        cfg = self.config
        self._expire(self.clock())
        started = await self._start_due(self.clock())
        if started and wait:
            _, pending = await asyncio.wait(started, timeout=cfg.run_deadline_ms / 1000)
            for running in list(self._runs.values()):
                if running.task in pending:
                    self._overrun(running)
            await asyncio.gather(*started)  # what a run raised, raised here as before
        elif started and cfg.run_grace_ms > 0:
            await asyncio.wait(started, timeout=cfg.run_grace_ms / 1000)
        runs, self._outcomes = self._outcomes, []
        claimed = await self.outbox.claim(self.clock(), cfg.outbox_batch)
        sent = await asyncio.gather(*(self._send(entry) for entry in claimed))
        return TickReport(
            ran=len(runs),
            run_failures=runs.count(False),
            delivered=sent.count(True),
            delivery_failures=sent.count(False),
            more=len(started) == cfg.job_batch or len(claimed) == cfg.outbox_batch,
        )

    async def _start_due(self, now_ms: int) -> list[asyncio.Task[bool]]:
        """Start each due job not under way, within its tenant's bound (a batch at most)."""
        cfg = self.config
        self._ended.clear()  # from here on: a run ending during the read below is noted
        self._held = {key: until for key, until in self._held.items() if until > now_ms}
        due = await self.jobs.due(now_ms, cfg.job_batch + len(self._runs) + len(self._held))
        busy = Counter(running.tenant for running in self._runs.values())
        started: list[asyncio.Task[bool]] = []
        for job in due:
            key = (job.tenant, job.id)
            if key in self._runs or key in self._ended or key in self._held:
                continue  # under way, its row read before its run's record, or held
            if busy[job.tenant] >= cfg.tenant_runs:
                continue
            busy[job.tenant] += 1
            started.append(self._start(job))
            if len(started) == cfg.job_batch:
                break
        return started

    def _start(self, job: Job) -> asyncio.Task[bool]:
        key = (job.tenant, job.id)
        running = self._runs[key] = _Running(job.tenant)
        task = asyncio.create_task(self._run(job, running), name=f"job {job.tenant}/{job.id}")
        running.task = task

        def ended(done: asyncio.Task[bool]) -> None:
            if self._runs.get(key) is running:
                del self._runs[key]
            self._ended.add(key)
            if done.cancelled():
                return
            if (exc := done.exception()) is not None:  # still due: again in max_sleep_ms
                log.error("job %s/%s: recording its run failed: %s", *key, _describe(exc))
                self._held[key] = self.clock() + self.config.max_sleep_ms
                return
            self._wake.set()  # its message can go out now; the tenant has a place again

        task.add_done_callback(ended)
        return task

    def _expire(self, now_ms: int) -> None:
        """Cancel the runs past their deadline (each is then recorded as failed)."""
        for running in list(self._runs.values()):
            started = running.started_ms
            if started is not None and now_ms - started >= self.config.run_deadline_ms:
                self._overrun(running)

    def _overrun(self, running: _Running) -> None:
        if not running.overdue and running.call is not None:
            running.overdue = True
            running.call.cancel()

    async def _run(self, job: Job, running: _Running) -> bool:
        slot = job.next_run_ms if job.next_run_ms is not None else self.clock()
        error: str | None = None
        result: Masked | Post | None = None
        skipped = stop = False
        notice: Masked | None = None
        async with self._limit:
            started = running.started_ms = self.clock()
            call = running.call = asyncio.ensure_future(self.run_job(job, slot))
            try:
                result = await call
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not running.overdue or (current is not None and current.cancelling()):
                    raise  # the loop's shutdown: nothing recorded, the slot stays due
                log.warning("job %s/%s ran past its deadline: cancelled", job.tenant, job.id)
                seconds = self.config.run_deadline_ms // 1000
                error = _describe(RunTimeout(f"no result within {seconds} s"))
                deadline = in_words(self.config.run_deadline_ms)
                notice = self._notice(job, f"it had no result after {deadline}, so it was stopped")
            except JobFailed as exc:  # recorded; its notice told once (`told`)
                error, stop, notice = exc.cause or _describe(exc), exc.pause, exc.notice
                skipped = isinstance(exc, JobSkipped)
                log.warning("job %s/%s failed: %s", job.tenant, job.id, error.split(":", 1)[0])
            except Exception as exc:  # the job's failure, recorded on it
                ref = secrets.token_hex(3)  # the notice names it; the log has the traceback
                log.error(
                    "job %s/%s failed unexpectedly (ref %s): %s",
                    job.tenant,
                    job.id,
                    ref,
                    type(exc).__name__,
                    exc_info=exc,
                )
                error, skipped = _describe(exc), isinstance(exc, JobSkipped)
                notice = self._notice(job, f"an unexpected error on my side (ref {ref})")
        if error is not None:
            result = told(job, notice, stop)
        now = self.clock()
        next_ms, pause = plan_after_run(job, now, error is not None, self.next_run, self.config)
        pause = pause or (stop and next_ms is not None)
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
        self._outcomes.append(error is None)
        return error is None

    def _notice(self, job: Job, reason: str) -> Masked | None:
        """The run_job's notice of this failure (`FailureNotices`), or None (none given,
        or its wording failed: the run is recorded all the same)."""
        if self.notices is None:
            return None
        try:
            return self.notices.failure_notice(job, reason)
        except Exception as exc:  # e.g. the vault unreadable: nothing unmasked goes out
            log.warning("job %s/%s: no failure notice: %s", job.tenant, job.id, type(exc).__name__)
            return None

    def outgoing(self, entry: OutboxEntry) -> OutboxEntry:
        """The entry as it is handed to `deliver`: its text masked again with the
        tenant's masker of now (a value vaulted since it was queued is masked too)."""
        if self.masks is None:
            return entry
        return replace(entry, text=self.masks(entry.tenant).mask(entry.text))

    async def _send(self, entry: OutboxEntry) -> bool:
        async with self._send_limit:
            try:
                await self.deliver(self.outgoing(entry))  # a masker that fails: not sent
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
        """Milliseconds until the loop has something to do (at most max_sleep_ms): a
        job slot (of a job that can start), an outbox entry, or a run's deadline."""
        now = self.clock()
        deadlines = [
            running.started_ms + self.config.run_deadline_ms
            for running in self._runs.values()
            if running.started_ms is not None and not running.overdue
        ]
        wakes = (
            await self._jobs_wake(now),
            await self.outbox.earliest_ms(),
            min(deadlines, default=None),
        )
        return sleep_ms(self.clock(), wakes, self.config.max_sleep_ms)

    async def _jobs_wake(self, now_ms: int) -> int | None:
        """The earliest slot of a job that could start then: not under way, nor due now
        while its tenant has no place (a run's end wakes the loop for those)."""
        held = {key: until for key, until in self._held.items() if until > now_ms}
        if not self._runs and not held:
            return await self.jobs.earliest_ms()
        busy = Counter(running.tenant for running in self._runs.values())
        first: int | None = None
        limit = len(self._runs) + len(held) + self.config.job_batch
        for job in await self.jobs.due(FAR_MS, limit):
            key = (job.tenant, job.id)
            if key in self._runs or key in held or job.next_run_ms is None:
                continue
            if job.next_run_ms <= now_ms and busy[job.tenant] >= self.config.tenant_runs:
                continue
            first = job.next_run_ms
            break
        # (past that many blocked jobs: max_sleep_ms at most)
        return min((t for t in (first, *held.values()) if t is not None), default=None)

    def wake(self) -> None:
        """Cut the current sleep short (a job was created or resumed)."""
        self._wake.set()

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    async def run(self) -> None:
        """Tick and sleep until `stop()`, then wait for the runs in flight (cancelled when
        this is); an error in a tick is logged, never fatal."""
        try:
            while not self._stopped:
                try:
                    more = (await self.tick(wait=False)).more
                    delay = 0 if more else await self.next_wake_ms()
                except Exception:
                    log.exception("scheduler tick failed")
                    delay = self.config.max_sleep_ms
                if not self._stopped:
                    await self._pause(delay / 1000)
            while self._runs:  # the daemon's stop grace bounds this wait
                await asyncio.wait([r.task for r in self._runs.values() if r.task is not None])
        finally:
            await self._cancel_runs()

    async def _cancel_runs(self) -> None:
        """Cancel the runs in flight and wait until they are gone (nothing recorded)."""
        tasks = [r.task for r in self._runs.values() if r.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

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
