"""Reading the audit chain for the learner: the events it needs, newer than a time.

The chain is read front to back with a cheap substring test before parsing, so
only the few relevant event types are decoded. Lines that do not parse (a torn
append the writer will repair) are skipped: the sweep reads, it never judges
the chain's integrity — `roost audit verify` does that.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

WANTED = ("skill.outcome_graded", "message.received")


def read_records(
    path: Path, since_ms: int, events: Iterable[str] = WANTED
) -> Iterator[dict[str, Any]]:
    """Records of the given events with `ts >= since_ms`, in chain order."""
    needles = [f'"event":"{e}"'.encode() for e in events]
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return
    with f:
        for line in f:
            if not any(n in line for n in needles):
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            ts = rec.get("ts")
            if isinstance(ts, int) and ts >= since_ms and isinstance(rec.get("details"), dict):
                yield rec
