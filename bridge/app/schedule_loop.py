"""The scheduler as part of the running daemon: wired to the roost, started, stopped.

`ScheduleLoop(roost)` builds the `Scheduler` over the roost's job and outbox
stores with `JobRunner` (turns through the core, tools through the roost's
tool sources), `Deliveries` (the terminal's `keep_for_terminal` from the
start, each channel that offers a `deliver` once it is up) and the audit
observer. `start()` runs three tasks in the daemon's loop: the scheduler
(which first makes the outbox entries a killed daemon had claimed due again;
a job missed while the daemon was down is due now and runs once), a
watch that wakes it at each notify of the stores' `WAKE_TOPIC` from any
process on the database (`roost send --to`, a job made in `roost chat`:
`db.subscribe`), and hourly pruning of delivered, dead and finished rows (and of
attachments past `[limits] attachment_keep_hours`). `stop()` lets a running
tick, and the job runs it started (each in the background: `Scheduler`), finish
for a grace period, then cancels them (a cancelled run records nothing: its job
stays due). With `lead` (instances sharing
a PostgreSQL database) the scheduler and the pruning run only on the
instance holding the lease `schedule` (`storage.leases.Singleton`): a job
runs once in the cluster, and the outbox leases released at start are a
dead holder's, never a live instance's; the lease goes after the stop. The clock, sleep and config
are injectable for tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from bridge.app.build import Roost
from bridge.channels.terminal.inbox import keep_for_terminal
from bridge.schedule.runtime import Deliveries, JobRunner, audit_observer, watch
from bridge.schedule.scheduler import Clock, Scheduler, SchedulerConfig
from bridge.schedule.service import next_run_ms
from bridge.storage.leases import Singleton

log = logging.getLogger(__name__)

PRUNE_EVERY_S = 3600.0
KEEP_DONE_JOBS_MS = 30 * 86_400_000


def wall_ms() -> int:
    return int(time.time() * 1000)


class ScheduleLoop:
    def __init__(
        self,
        roost: Roost,
        *,
        clock: Clock = wall_ms,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        config: SchedulerConfig | None = None,
        stop_grace_s: float = 10.0,
        lead: Singleton | None = None,
    ) -> None:
        schedule = roost.schedule
        # the terminal reads its entries itself (an open `roost chat`); the rest are
        # added as their channels come up
        self.deliveries = Deliveries({"cli": keep_for_terminal})
        self.runner = JobRunner(
            handle=roost.core.handle,
            resolve=roost.resolver.resolve,
            tool_sources=roost.tool_sources,
            tenant_dirs=roost.tenant_dirs,
            now=lambda: clock() / 1000,
            masks=roost.loadout.vault.masker,  # what a run posts: masked before the outbox
            max_post_chars=lambda: roost.settings.limits.max_reply_chars,  # cut as a reply
            person_of=lambda channel, chat: (  # a chat's person, as its platform declares
                p.identity_of_chat(chat) if (p := roost.platforms.get(channel)) else None
            ),
        )
        self.scheduler = Scheduler(
            schedule.jobs,
            schedule.outbox,
            run_job=self.runner,
            deliver=self.deliveries,
            next_run=next_run_ms,
            clock=clock,
            sleep=sleep,
            observe=audit_observer(roost.audit),
            config=config,
            masks=self.runner.masker_for,  # every delivery masked again with the vault of now
        )
        self._roost, self._clock = roost, clock
        self._grace = stop_grace_s
        self._tasks: list[asyncio.Task[None]] = []
        self._lead = lead  # instances sharing a database: only the lease's holder schedules
        schedule.subscribe(self.scheduler.wake)

    def start(self) -> None:
        if self._tasks:
            return
        if self._lead is not None:
            self._tasks = [
                asyncio.create_task(self._lead.run(self._run_and_prune), name="scheduler"),
                asyncio.create_task(watch(self._roost.database, self.scheduler.wake)),
            ]
            return
        self._tasks = [
            asyncio.create_task(self._run(), name="scheduler"),
            asyncio.create_task(watch(self._roost.database, self.scheduler.wake)),
            asyncio.create_task(self._prune()),
        ]

    async def _run_and_prune(self) -> None:
        """The scheduler and the pruning, while this instance holds the lease."""
        prune = asyncio.create_task(self._prune())
        try:
            await self._run()
        finally:
            prune.cancel()
            await asyncio.gather(prune, return_exceptions=True)

    async def _run(self) -> None:
        """Release the leases a killed daemon held, then run the scheduler (which runs
        even when the release failed: those entries are due again when their lease ends)."""
        try:
            released = await self._roost.schedule.outbox.release_leases(self._clock())
        except Exception:
            log.exception("schedule: releasing the outbox leases of the last run failed")
            released = 0
        if released:
            log.info("schedule: %d outbox entries claimed before a restart are due again", released)
        await self.scheduler.run()

    async def stop(self) -> None:
        """Stop the loop (a tick in progress may finish within the grace), then the rest."""
        if not self._tasks:
            return
        tasks, self._tasks = self._tasks, []
        self.scheduler.stop()
        main, helpers = tasks[0], tasks[1:]
        # an instance waiting for the lease runs no tick: nothing to let finish (a stop
        # waited out the whole grace there, 10 s at every `systemctl stop`)
        idle = self._lead is not None and not self._lead.held
        _, pending = await asyncio.wait({main}, timeout=0 if idle else self._grace)
        for task in (*pending, *helpers):
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._lead is not None:  # after the tick finished: another instance takes over
            await self._lead.release()

    async def _prune(self) -> None:
        schedule = self._roost.schedule
        while True:
            try:
                now = self._clock()
                removed = await schedule.outbox.prune(now)
                removed += await schedule.jobs.prune_done(now - KEEP_DONE_JOBS_MS)
                if removed:
                    log.info("schedule: pruned %d old outbox entries and finished jobs", removed)
                swept = self._roost.senses.sweep(now / 1000)  # old attachments in the inboxes
                if swept:
                    log.info("senses: removed %d old attachments", swept)
            except Exception:
                log.exception("schedule: pruning failed")
            await asyncio.sleep(PRUNE_EVERY_S)
