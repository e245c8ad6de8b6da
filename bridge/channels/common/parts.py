"""What of a message laid out in several parts already reached the person (any platform).

A platform that sends a long message as several parts records each part the
moment it arrives (`OutboxPart`, `bridge.schedule.outbox_parts`), so an
attempt that fails at part 2 is retried from part 2. `Progress` is one
attempt's view: what is known (`settled`: sent, or sent without an answer,
which is never sent again since it may show) and recording a part. It writes
through to a `PartLog`: the outbox's own record of an entry (`for_entry`,
durable, across restarts), or none for a reply's first attempt (`Progress()`:
what it records is handed to the outbox with the text, `shown`, when a
later part fails).
"""

from __future__ import annotations

from collections.abc import Mapping

from bridge.schedule.outbox_parts import OutboxPart, PartLog


def settled(part: OutboxPart | None) -> bool:
    """A part that is never sent again: it arrived, or its send had no answer (it may show)."""
    return part is not None and part.state in ("sent", "unknown")


class NoParts:
    """A `PartLog` that remembers nothing (every attempt starts at part 1)."""

    async def parts(self, entry_id: int) -> Mapping[int, OutboxPart]:
        return {}

    async def mark(self, entry_id: int, part: OutboxPart) -> None:
        return None


class Progress:
    """One attempt at a message's parts: what is known, and recording each as it arrives."""

    def __init__(
        self,
        known: Mapping[int, OutboxPart] | None = None,
        log: PartLog | None = None,
        entry: int = 0,
    ) -> None:
        self.known: dict[int, OutboxPart] = dict(known or {})
        self._log: PartLog = log if log is not None else NoParts()
        self._entry = entry

    @classmethod
    async def for_entry(cls, log: PartLog, entry: int) -> Progress:
        """The outbox entry's record so far; what is marked is written to it at once."""
        return cls(await log.parts(entry), log, entry)

    def settled(self, idx: int) -> bool:
        return settled(self.known.get(idx))

    async def mark(self, part: OutboxPart) -> None:
        """Record a part (in the log first: a failure to record it raises)."""
        await self._log.mark(self._entry, part)
        self.known[part.idx] = part

    def shown(self) -> list[OutboxPart]:
        """What is known, in order (for the outbox entry of what failed)."""
        return [self.known[idx] for idx in sorted(self.known)]
