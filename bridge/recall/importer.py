"""`roost import`: a file of past conversations into a tenant's index, streamed and idempotent.

`import_stream` reads items from `bridge.recall.formats` and hands them to the
`Indexer` (the one door: screened, masked) in batches of `BATCH` messages, one
transaction each, so memory stays flat whatever the file's size and what is
imported is searchable batch by batch. A message is known by its
conversation and id, so importing the same file again adds nothing. The
`Summary` counts conversations, messages read, added, already known,
refused (a credential in the text) and skipped items, naming where each
skipped item was (line or conversation number) and why.
Nothing imported becomes a memory note: the index is searchable (`recall`),
and memory notes are written only by the person or the model in a chat.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

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


def import_stream(
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

    def flush() -> None:
        got = indexer.admit(dirs, batch)
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
            if len(batch) >= BATCH:
                flush()
    if batch:
        flush()
    return summary
