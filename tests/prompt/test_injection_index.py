"""The recall injection's index gives the scores `explain` gives: `score_held` against
`score_notes`, over random notes and messages (English, German, shared and rare words)."""

from __future__ import annotations

import random

from bridge.recall.notes import NoteIndex, note_terms, score_held, score_notes

LINES = (
    "garden tomato watering schedule berlin flight booking passport dentist",
    "appointment tuesday Geburtstag Mutter Kuchen backen Zahnarzt Termin",
    "running shoes marathon training budget rent invoice topic the and about",
)
WORDS = tuple(w for line in LINES for w in line.split(" "))


def test_the_index_scores_as_every_note_against_every_word() -> None:
    rng = random.Random(7)
    for _ in range(60):
        notes = [
            (f"note {i}", " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 30))))
            for i in range(rng.randrange(0, 40))
        ]
        held = [note_terms(name, text) for name, text in notes]
        index = NoteIndex(held)
        for _ in range(10):
            message = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 8)))
            floor = rng.choice((0.0, 0.1, 0.3, 0.6, 1.0))
            want = [
                s for s in score_notes(message, notes, held) if s.score > 0 and s.score >= floor
            ]
            assert score_held(message, notes, index, floor) == want, (message, floor)


def test_an_index_put_right_for_changed_notes_scores_as_a_fresh_one() -> None:
    """`NoteIndex.changed` (a topic saved) after messages asked some terms already, many
    times over: the scores stay those of every note against every word."""
    rng = random.Random(11)

    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 30)))

    for _ in range(20):
        notes = [(f"note {i}", text()) for i in range(rng.randrange(1, 40))]
        held = [note_terms(name, body) for name, body in notes]
        index = NoteIndex(held)
        for _ in range(30):
            message = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 8)))
            floor = rng.choice((0.0, 0.1, 0.3, 0.6))
            want = [
                s for s in score_notes(message, notes, held) if s.score > 0 and s.score >= floor
            ]
            assert score_held(message, notes, index, floor) == want, (message, floor)
            which = rng.sample(range(len(notes)), rng.randrange(0, min(3, len(notes)) + 1))
            notes, held = list(notes), list(held)
            for i in which:
                notes[i] = (notes[i][0], text())
                held[i] = note_terms(*notes[i])
            index = index.changed(held, which)
