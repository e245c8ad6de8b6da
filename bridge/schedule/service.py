"""The schedule as the rest of roost sees it: the job store and the outbox over
the `Database` (the protocol of `bridge.storage`), the zone a
tenant's times are read in, who to wake when a job changes (the running
scheduler subscribes; commands and tools call `changed`), and whether a
daemon runs the jobs at all (`serving`: a terminal's `roost chat` builds the
same service without one).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from bridge.schedule.jobs import JobLimits, JobStore
from bridge.schedule.outbox import OutboxStore
from bridge.schedule.recur import Every, next_run, parse_every
from bridge.schedule.when import WhenError
from bridge.storage.protocol import Database


def next_run_ms(spec: str, tz: str, after_ms: int) -> int | None:
    """The next slot of a stored recurrence strictly after `after_ms`; None for a one-shot."""
    if not spec:
        return None
    every = parse_every(spec, ZoneInfo(tz))
    if isinstance(every, WhenError):
        raise ValueError(f"stored recurrence {spec!r} no longer parses: {every.message}")
    return to_ms(next_slot(every, after_ms))


def next_slot(every: Every, after_ms: int) -> datetime:
    return next_run(every, datetime.fromtimestamp(after_ms / 1000, UTC))


def to_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def host_zone() -> str:
    """The host's IANA zone name (TZ, /etc/localtime), or UTC when it cannot be told."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        try:
            ZoneInfo(name)
            return name
        except (ValueError, KeyError, OSError):
            pass
    try:
        link = os.path.realpath("/etc/localtime")
        marker = "/zoneinfo/"
        if marker in link:
            candidate = link.split(marker, 1)[1]
            ZoneInfo(candidate)
            return candidate
    except (ValueError, KeyError, OSError):
        pass
    return "UTC"


class ScheduleService:
    """Stores, limits and the default zone; `changed()` wakes the scheduler."""

    def __init__(
        self,
        db: Database,
        limits: JobLimits,
        default_tz: str | None,
        serving: Callable[[], bool | None] = lambda: None,
    ) -> None:
        self.jobs = JobStore(db, next_run_ms, limits)
        self.outbox = OutboxStore(db)
        self.default_tz = default_tz or host_zone()
        self.serving = serving  # a daemon runs the jobs: True, False, or None (cannot tell)
        self._wakers: list[Callable[[], None]] = []

    def subscribe(self, wake: Callable[[], None]) -> None:
        self._wakers.append(wake)

    def changed(self) -> None:
        for wake in self._wakers:
            wake()
