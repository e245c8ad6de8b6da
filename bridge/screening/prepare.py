"""Every table of the screens built ahead of its first use, one small step at a time.

The screens build their tables on first use, not at import, so a command that
never screens never pays for them (`roost send /help`, `roost chat` before its
first message): the secret rules (`rule_data.rule_set`: `secret_rules.toml`
read, about 95 patterns compiled), the rules' keyword gate and scanners
(`secret_rules`), the services' names (`secret_context`), the injection tables
and their trigger words (`injection`), and what each `windowed.Scanner` reads
from its pattern on its first search (a parse and up to three patterns). A
daemon's first message would pay for them inside its turn or the recall
indexing right after it: about 25 ms of CPU held on the event loop, 65 ms when
it saves a memory (measured on a 2-core machine; about 80 ms for all of them).

`steps()` builds them one piece per `next()`, in the order a first message
needs them: the secret screen the recall indexer runs on every message first,
the injection patterns (memory, skills, corrections) last. The longest step
reads and compiles the rules' file (about 12 ms); most are well under 1 ms.
`prepare_screens()` runs them on the event loop in slices of 1 ms with pauses
between: `roost serve` right after it says it is ready, `roost chat` once its
roost is built (while the person types).
`prepared()` says whether they are all built, building nothing.
The patterns compiled here (the rules', the injection screen's, what each
scanner reads) are roost's own, kept across processes by `bridge.regex_code`:
the steps took 150-176 ms of CPU without it and 77-101 ms with it (the slow
2-core machine of docs/scaling.md, five pairs taking turns, load 1.2-2.8). Since
the keyword gate, the word tries and the named rules are kept too and each shipped
pattern's shape is read from `bridge.screening.shape_cache`, 24 ms (median of 9,
against 71 ms before, session 27).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

from bridge.screening import injection, secret_context, secret_rules, secret_speech
from bridge.screening.rule_data import rule_set
from bridge.screening.windowed import Scanner

# what builds each table on first use (each `functools.cache`d: it says whether it ran)
_BUILDERS = (
    rule_set,
    secret_rules._compiled,
    secret_context._names,
    injection._tables,
    injection._gates,
)
# (what, the call that builds its tables and returns its scanners), first needed first
_PARTS: tuple[tuple[str, Callable[[], tuple[Scanner, ...]]], ...] = (
    ("secret rules", secret_rules.scanners),
    ("secret assignments and cards", secret_context.scanners),
    ("secrets in sentences", secret_speech.scanners),
    ("injection patterns", injection.scanners),
)


def steps() -> Iterator[str]:
    """Build every table, one step per `next()`; each yields what it built."""
    rule_set()
    yield "secret rules"
    for what, scanners_of in _PARTS:
        scanners = scanners_of()
        yield what
        for scanner in scanners:
            scanner.prepare()
            yield what


def prepared() -> bool:
    """Every table is built and every scanner has read its pattern (builds nothing)."""
    if not all(built.cache_info().currsize for built in _BUILDERS):
        return False  # past this, `scanners_of()` only returns what is built
    return all(scan.ready for _, scanners_of in _PARTS for scan in scanners_of())


SLICE_S = 0.001  # how long `prepare_screens` holds the loop at a time (a step at least)


async def prepare_screens(slice_s: float = SLICE_S) -> None:
    """`steps()` on the running loop (about 25 ms of CPU in all with warm caches, 80 without
    the shapes, the longest step about 12 ms): steps for `slice_s`, then as long a pause,
    so a message meanwhile runs between them and builds what it still needs itself (with
    no pause, such a message waited for a step at each of its own awaits)."""
    began = time.perf_counter()
    for _ in steps():
        if time.perf_counter() - began >= slice_s:
            await asyncio.sleep(slice_s)
            began = time.perf_counter()
