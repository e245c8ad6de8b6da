"""Audit records about strangers, rate-limited and aggregated.

Anyone on Telegram can message the bot, so events a stranger causes
(`access.refused`, `pairing.failed`) must not grow the append-only chain
without bound. `StrangerAudit` writes at most one record per (event,
channel, identity) per window, carrying `suppressed`: how many of the same
events were not recorded since that identity's previous record. At most
`records_per_window` such records are written per window in all; beyond
that, events are only counted, and one `access.flood` record per event kind
(`count` events from `identities` identities) is written when the window
rolls over. `flush()` (at shutdown) also folds every identity's
still-unrecorded count into those aggregates, so nothing counted is lost.
So per window the chain grows by at most
`records_per_window` + (number of event kinds) records, however many
strangers write. At most `max_tracked` identities are remembered (least
recently seen evicted first; an evicted identity's unrecorded count moves
into the aggregate). The clock is injected; nothing sleeps.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from bridge.types.audit_sink import AuditSink

FLOOD_EVENT = "access.flood"


@dataclass(frozen=True, slots=True)
class StrangerLimits:
    window_s: float = 3600.0
    max_tracked: int = 4096  # identities remembered (memory bound)
    records_per_window: int = 50  # per-identity records per window, all identities together


class StrangerKey(NamedTuple):
    """Whose events of which kind are counted together."""

    event: str
    channel: str
    identity: str


@dataclass(slots=True)
class _Seen:
    recorded_at: float  # when this identity's last record (or aggregate count) was made
    suppressed: int = 0


@dataclass(slots=True)
class _Overflow:
    count: int = 0
    identities: int = 0


class StrangerAudit:
    def __init__(
        self,
        audit: AuditSink,
        clock: Callable[[], float],
        limits: StrangerLimits | None = None,
    ) -> None:
        self._audit, self._clock = audit, clock
        self._limits = limits or StrangerLimits()
        self._seen: OrderedDict[StrangerKey, _Seen] = OrderedDict()
        self._window_start: float | None = None
        self._written = 0
        self._overflow: dict[str, _Overflow] = {}

    @property
    def tracked(self) -> int:
        return len(self._seen)

    async def record(
        self, event: str, channel: str, identity: str, details: Mapping[str, object]
    ) -> bool:
        """Count one event; write its record if the limits allow. True if written."""
        now = self._clock()
        await self._roll(now)
        key = StrangerKey(event, channel, identity)
        seen = self._seen.get(key)
        if seen is not None:
            self._seen.move_to_end(key)
            if now - seen.recorded_at < self._limits.window_s:
                seen.suppressed += 1
                return False
        suppressed = seen.suppressed if seen is not None else 0
        if self._written >= self._limits.records_per_window:
            over = self._overflow.setdefault(event, _Overflow())
            over.count += 1 + suppressed
            over.identities += 1
            self._remember(key, _Seen(now))
            return False
        self._written += 1
        self._remember(key, _Seen(now))
        body = {**details, "channel": channel, "identity": identity, "suppressed": suppressed}
        await self._audit.emit(event, None, body)
        return True

    async def flush(self) -> None:
        """At shutdown: write one aggregate per event kind of all not yet recorded."""
        for key, seen in self._seen.items():
            if seen.suppressed:
                over = self._overflow.setdefault(key.event, _Overflow())
                over.count += seen.suppressed
                over.identities += 1
                seen.suppressed = 0
        await self._write_overflow()

    async def _write_overflow(self) -> None:
        overflow, self._overflow = self._overflow, {}
        for event, over in sorted(overflow.items()):
            details = {
                "event": event,
                "count": over.count,
                "identities": over.identities,
                "window_s": int(self._limits.window_s),
            }
            await self._audit.emit(FLOOD_EVENT, None, details)

    async def _roll(self, now: float) -> None:
        start = self._window_start
        if start is not None and now - start < self._limits.window_s:
            return
        if start is not None:
            await self._write_overflow()
        self._window_start, self._written = now, 0

    def _remember(self, key: StrangerKey, seen: _Seen) -> None:
        self._seen[key] = seen
        self._seen.move_to_end(key)
        while len(self._seen) > self._limits.max_tracked:
            gone, old = self._seen.popitem(last=False)
            if old.suppressed:
                over = self._overflow.setdefault(gone.event, _Overflow())
                over.count += old.suppressed
                over.identities += 1
