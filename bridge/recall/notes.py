"""Which notes fit a message: each note scored by the share of the message's terms it holds.

Pure. A note is any (name, text) pair (memory topics, wired by the app). The
score of a note is the idf-weighted share of the message's look-up terms
(`query_groups`: stop words out, stems both ways) found among the note's terms:
1.0 when the note holds every word of the message, 0 when none; idf is taken
over the notes themselves, so a word every note holds counts for little, and a
word no note holds counts half (it cannot tell the notes apart).
`choose` keeps the notes at or above the floor, best first, while their texts
fit the character budget (a note that does not fit is skipped, a smaller one
after it may still go in). `score_held` gives the same scores for the notes
above 0 through a `NoteIndex` (term -> notes), for a caller that scores every
message against the same notes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from bridge.recall.terms import index_term_set, query_groups

UNHELD = 0.5


@dataclass(frozen=True, slots=True)
class Scored:
    name: str
    text: str
    score: float
    matched: tuple[str, ...]  # the message's terms the note holds


def note_terms(name: str, text: str) -> frozenset[str]:
    """A note's look-up terms: what `score_notes` matches a message against (a caller
    that keeps notes between messages may keep these too and pass them as `held`)."""
    return index_term_set(f"{name}\n{text}")


def score_notes(
    message: str,
    notes: Sequence[tuple[str, str]],
    held: Sequence[frozenset[str]] | None = None,
) -> list[Scored]:
    """Every note with its score against `message`, best first (ties by name).

    A word of the message counts as held when any of its stems is in the note.
    `held`: each note's `note_terms`, when the caller has them already."""
    wanted = query_groups(message)
    if not wanted or not notes:
        return [Scored(name, text, 0.0, ()) for name, text in notes]
    if held is None:
        held = [note_terms(name, text) for name, text in notes]
    df: Counter[tuple[str, ...]] = Counter(
        g for terms in held for g in wanted if terms.intersection(g)
    )
    # a word no note holds tells nothing about which note fits: it counts half
    idf = {g: math.log(1 + len(notes) / (1 + df[g])) if df[g] else UNHELD for g in wanted}
    total = sum(idf.values()) or 1.0
    out = []
    for (name, text), terms in zip(notes, held, strict=True):
        matched = [g for g in wanted if terms.intersection(g)]
        score = sum(idf[g] for g in matched) / total
        out.append(Scored(name, text, score, tuple(g[0] for g in matched)))
    return sorted(out, key=lambda s: (-s.score, s.name))


class NoteIndex:
    """Which notes hold a term, for scoring many messages against the same notes: found
    by one pass over the notes the first time a message asks for the term, then kept
    (term -> the positions of the notes holding it; a new set of notes costs nothing
    until it is asked).

    `changed` makes the index of the notes with a few of them changed by putting the
    kept holders right for those notes alone (taken out of the terms they no longer
    hold, added to those they hold now): a topic saved costs the terms of that topic,
    and a word asked once is never looked for in every note again. The index it was
    made from gives what it kept up to it; asked again, that one finds its own afresh."""

    def __init__(
        self, held: Sequence[frozenset[str]], known: dict[str, set[int]] | None = None
    ) -> None:
        self.size = len(held)
        self.held = held
        self._known: dict[str, set[int]] | None = known if known is not None else {}

    def changed(self, held: Sequence[frozenset[str]], which: Sequence[int]) -> NoteIndex:
        """The index of `held`: these notes with those at the positions `which` changed
        (the same number of notes, the others the same)."""
        known, self._known = self._known, None  # given up to the new version
        if len(held) != self.size or known is None:
            return NoteIndex(held)
        for i in set(which):
            before, now = self.held[i], held[i]
            for term in before - now:
                gone = known.get(term)
                if gone is not None:
                    gone.discard(i)
            for term in now - before:
                found = known.get(term)
                if found is not None:
                    found.add(i)
        return NoteIndex(held, known)

    def holders(self, term: str) -> AbstractSet[int]:
        """The positions of the notes holding `term` (not to be changed by the caller)."""
        known = self._known
        if known is None:  # given up to a newer version: found afresh for this one
            known = self._known = {}
        found = known.get(term)
        if found is None:
            if len(known) >= 65_536:
                known.clear()
            found = known[term] = {i for i, terms in enumerate(self.held) if term in terms}
        return found


def score_held(
    message: str, notes: Sequence[tuple[str, str]], index: NoteIndex, floor: float = 0.0
) -> list[Scored]:
    """The notes of `score_notes(message, notes, held)` that score above 0 and at least
    `floor`, with the same scores (the same sums), best first: found through `index`
    (made of `held`) instead of every note's terms against every word. No notes: no
    words of the message looked up (a tenant without topics costs no tokenising)."""
    if not notes:
        return []
    wanted = query_groups(message)
    if not wanted:
        return []
    holders = index.holders
    by_group: list[AbstractSet[int]] = []
    for g in wanted:
        found = holders(g[0])
        for term in g[1:]:
            found = found | holders(term)
        by_group.append(found)
    n = len(notes)
    idf = [math.log(1 + n / (1 + len(f))) if f else UNHELD for f in by_group]
    total = sum(idf) or 1.0
    # words too common to lift a note to the floor, even all together: a note holding
    # only those cannot be kept, so only the holders of the others are scored
    least = (floor - 1e-9) * total
    weak, together = set(), 0.0
    for k in sorted(range(len(wanted)), key=idf.__getitem__):
        if together + idf[k] >= least:
            break
        together += idf[k]
        weak.add(k)
    candidates: set[int] = set()
    for k, found in enumerate(by_group):
        if k not in weak:
            candidates |= found
    out = []
    for i in candidates:
        ks = [k for k, found in enumerate(by_group) if i in found]  # in `wanted` order
        score = sum(idf[k] for k in ks) / total
        if score > 0 and score >= floor:
            name, text = notes[i]
            out.append(Scored(name, text, score, tuple(wanted[k][0] for k in ks)))
    return sorted(out, key=lambda s: (-s.score, s.name)) if len(out) > 1 else out


def choose(scored: Sequence[Scored], floor: float, budget: int) -> list[Scored]:
    """The notes at or above `floor` (and above 0), best first, within `budget` characters."""
    kept, used = [], 0
    for note in scored:
        if note.score <= 0 or note.score < floor:
            break
        size = len(note.name) + len(note.text) + 8
        if used + size > budget:
            continue
        kept.append(note)
        used += size
    return kept
