"""What of an outbox entry has reached the person, part by part (table `outbox_parts`).

A message a platform splits into several parts (Telegram: 4096 characters
each) is delivered part by part, and each part that arrived is recorded at
once (`mark`), so an attempt that fails at part 2 resumes at part 2: part 1
is never sent twice. A part is `sent` (it arrived; `ref` is the platform's
message id), `draft` (a message already shows an earlier version of it, e.g.
a streamed draft, so delivery edits `ref` instead of sending) or `unknown`
(a send whose outcome nobody knows: the request reached the platform and no
answer came; it is never sent again, so a retry cannot duplicate what the
person sees). Parts of an entry are deleted with it (`OutboxStore.prune`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, NamedTuple, Protocol

from bridge.storage.protocol import Database

PartState = Literal["sent", "draft", "unknown"]


class OutboxPart(NamedTuple):
    idx: int  # 0-based position in the message as the platform lays it out
    state: PartState
    ref: str = ""  # the platform's id of the message that shows it ('' when unknown)


class PartLog(Protocol):
    """The delivery side's view: what is known of an entry's parts, and recording one."""

    async def parts(self, entry_id: int) -> Mapping[int, OutboxPart]: ...

    async def mark(self, entry_id: int, part: OutboxPart) -> None: ...


class OutboxParts:
    """`PartLog` over the outbox's `Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def parts(self, entry_id: int) -> dict[int, OutboxPart]:
        rows = await self.db.fetch_all(
            "SELECT idx, state, ref FROM outbox_parts WHERE entry = ? ORDER BY idx", (entry_id,)
        )
        return {int(idx): OutboxPart(int(idx), state, ref) for idx, state, ref in rows}

    async def mark(self, entry_id: int, part: OutboxPart) -> None:
        """Record one part (replacing what was known of it); commits at once."""
        await self.put(entry_id, (part,))

    async def put(self, entry_id: int, parts: Iterable[OutboxPart]) -> None:
        """Record parts; joins an open transaction of the same `Database` (the entry's
        enqueue)."""
        await self.db.execute_many(
            "INSERT INTO outbox_parts (entry, idx, state, ref) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (entry, idx) DO UPDATE SET state = excluded.state,"
            " ref = excluded.ref",
            [(entry_id, p.idx, p.state, p.ref) for p in parts],
        )
