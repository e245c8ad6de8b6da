"""One input of the prompt's snapshot, kept while what it was made from is provably unchanged.

A `Part` is a value (the steering texts, the profile lines, the chat's
settings, the tool rows, ...) and the proof it still holds: the `Reads` of
the file cache made while computing it (`FileCache.recording`: every file,
listing and stat key, vouched for by inotify generations) and a `token` of
everything else it was made from (database change counts, `TableChanges`;
configuration it was given). A token of None means nothing vouches for the
value: it is computed again on every use. `Parts` keeps the parts of one
chat and answers them, computing again only those whose proof failed; one
look at the watch covers every file of every part, and only a part with a
file in a directory that changed has its files looked at one by one (and
when they all hold, its coarse stamps move on to the directory's generation
now: a write beside them is paid for once, not on every later turn).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from bridge.core.dirwatch import Stamp
from bridge.core.filecache import FileCache, Reads


@dataclass(slots=True)
class Part:
    value: Any
    token: Hashable | None  # None: nothing vouches for the value
    reads: Reads


@dataclass(slots=True)
class Parts:
    """The parts of one chat's snapshot, by name, and the stamps of all their files."""

    parts: dict[str, Part] = field(default_factory=dict)
    stamps: tuple[Stamp, ...] = ()
    coarse: tuple[Stamp, ...] = ()  # fewer stamps implying `stamps` (`Reads.coarse`)


class Keeper:
    """Answers parts from a `Parts`, through one file cache (see the module)."""

    def __init__(self, files: FileCache) -> None:
        self._files = files

    def begin(self, parts: Parts, tokens: dict[str, Hashable | None]) -> frozenset[str]:
        """The parts that hold without a look at each of their files: the same token, no
        file of theirs changed (one look at the watch for all parts) and the answers
        nothing vouches for (links) the same. `get` checks the others one by one."""
        files = self._files
        moved = files.moved(parts.coarse)
        if moved is None:
            return frozenset()
        holds = []
        recoarsened = False
        for name, token in tokens.items():
            part = parts.parts.get(name)
            if part is None or token is None or part.token != token:
                continue
            reads = part.reads
            if moved and not moved.isdisjoint(reads.coarse):
                # a directory of its changed: its files? (when they did not, its coarse
                # stamps move on to now, so the next turn needs one look again; not
                # every time when it keeps changing: `FileCache.holds`)
                held, moved_on = files.holds(reads)
                if not held:
                    continue
                recoarsened = recoarsened or moved_on
            if not reads.loose or files.loose_hold(reads):
                holds.append(name)
        if recoarsened and len(holds) == len(tokens):
            self.seal(parts)  # else `get` computes a part again and the round seals
        return frozenset(holds)

    def get(
        self,
        parts: Parts,
        name: str,
        token: Hashable | None,
        compute: Callable[[], Any],
        checked: bool,
    ) -> Any:
        """The part's value: kept when `checked` (by `begin`) or its proof holds, else
        computed again (recording what it reads)."""
        part = parts.parts.get(name)
        if part is not None and (
            checked or (token is not None and part.token == token and self._files.still(part.reads))
        ):
            return part.value
        with self._files.recording() as reads:
            value = compute()
        parts.parts[name] = Part(value, token, reads)
        return value

    def seal(self, parts: Parts) -> None:
        """After a round that computed something: the stamps of all parts together."""
        stamps: dict[Stamp, None] = {}
        coarse: dict[Stamp, None] = {}
        for part in parts.parts.values():
            stamps.update(dict.fromkeys(part.reads.stamps))
            coarse.update(dict.fromkeys(part.reads.coarse))
        parts.stamps, parts.coarse = tuple(stamps), tuple(coarse)
