"""`roost import`: a file of past conversations into a tenant's index, streamed and idempotent.

`import_stream` reads items from `bridge.recall.formats` and hands them to the
`Indexer` (the one door: screened, masked) in batches of `BATCH` messages
(an INSERT per 500 of them, then their terms), so memory stays flat whatever
the file's size and what is imported is searchable batch by batch. A message is known by its
conversation and id, so importing the same file again adds nothing. The
`Summary` counts conversations, messages read, added, already known,
refused (a credential in the text) and skipped items, naming where each
skipped item was (line or conversation number) and why.
Nothing imported becomes a memory note by itself: the sentences in which the
person stated a fact about themselves (`bridge.memory.facts`, the person's own
messages only, the newest per subject) are kept in `Summary.facts`, each
screened and masked through the same door as the index (a sentence with a
credential is dropped); `roost import` offers them as memory proposals the
person keeps or declines in a chat (`bridge.memory.proposals`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from bridge.memory.facts import stated_facts
from bridge.memory.proposals import Candidate, newest
from bridge.recall.formats import Progress, Skipped, Started, read
from bridge.recall.index import Message
from bridge.recall.indexer import Indexer
from bridge.types.tenant_dirs import TenantDirs

BATCH = 5000
SHOWN_SKIPS = 20


@dataclass(slots=True)
class Summary:
    conversations: int = 0
    messages: int = 0
    added: int = 0
    known: int = 0
    refused: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    facts: dict[str, Candidate] = field(default_factory=dict)  # subject -> newest statement

    def lines(self) -> list[str]:
        out = [
            f"{self.conversations:,} conversations, {self.messages:,} messages read: "
            f"{self.added:,} added, {self.known:,} already there, "
            f"{self.refused:,} not indexed (a password or key in them)",
        ]
        if self.skipped:
            out.append(f"{len(self.skipped):,} skipped:")
            out += [f"  {s.where}: {s.why}" for s in self.skipped[:SHOWN_SKIPS]]
            if len(self.skipped) > SHOWN_SKIPS:
                out.append(f"  ... and {len(self.skipped) - SHOWN_SKIPS:,} more")
        return out

    def details(self, fmt: str) -> dict[str, object]:
        """The audit record's details: counts only."""
        return {
            "format": fmt,
            "conversations": self.conversations,
            "read": self.messages,
            "added": self.added,
            "known": self.known,
            "refused": self.refused,
            "skipped": len(self.skipped),
        }


async def import_stream(
    indexer: Indexer,
    dirs: TenantDirs,
    fmt: str,
    stream: BinaryIO,
    progress: Progress | None = None,
    on_batch: Callable[[Summary], None] | None = None,
) -> Summary:
    """Import every message of `stream` (format `fmt`) into the tenant's index."""
    summary = Summary()
    batch: list[Message] = []

    async def flush() -> None:
        got = await indexer.admit(dirs, batch)
        summary.added += got.added
        summary.known += got.known
        summary.refused += got.refused
        batch.clear()
        if on_batch is not None:
            on_batch(summary)

    for item in read(fmt, stream, progress):
        if isinstance(item, Started):
            summary.conversations += 1
        elif isinstance(item, Skipped):
            summary.skipped.append(item)
        else:
            summary.messages += 1
            batch.append(item)
            if item.role == "user":
                newest(_candidates(item), summary.facts)
            if len(batch) >= BATCH:
                await flush()
    if batch:
        await flush()
    screened = {}
    for subject, c in summary.facts.items():
        text = indexer.clean(dirs, c.sentence)
        if text is not None and text.strip():
            screened[subject] = Candidate(c.subject, text, c.at_ms, c.conversation)
    summary.facts = screened
    return summary


def _candidates(m: Message) -> list[Candidate]:
    return [Candidate(k, s, m.at_ms, m.conversation) for k, s in stated_facts(m.text)]
