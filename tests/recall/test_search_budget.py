"""The search's work stays bounded: the postings budgets of the query and of its feedback.

A query's own terms always reach the index (at least the rarest of them, even
past `postings`); the pseudo-relevance feedback's expansion terms are
optional, so one found in more than `feedback_postings` messages is not
searched at all (scoring its messages is what made a query at 1M messages
slow), while a rare one still adds what only it finds.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bridge.recall.index import Message, RecallIndex, legacy_path
from bridge.recall.indexer import Indexer
from bridge.recall.search import Tuning, search
from bridge.storage.protocol import Database
from bridge.types.tenant_dirs import TenantDirs
from tests.recall.legacy_files import old_index

QUIET = Tuning(context=0.0, session=0.0, speaker=0.0)


async def _index(db: Database, texts: list[str]) -> RecallIndex:
    index = RecallIndex(db, "t")
    await index.add(
        Message(f"c{i}", str(i), "user", t, 1_000 + i, "web") for i, t in enumerate(texts)
    )
    return index


FALCONRY = [
    "the falcon wore a leather hood",
    "a falcon hood keeps the bird calm",
    "red hood in the forest",
    "hood of the car was dented",
    "a hood against the rain",
    "she pulled up her hood",
]


async def test_an_expansion_term_past_the_feedback_budget_is_not_searched(db: Database) -> None:
    index = await _index(db, FALCONRY)
    # "hood" is shared by both falcon messages: the feedback's expansion term
    wide = [h.row.text for h in await search(index, "falcon", 10, QUIET)]
    assert set(wide) == set(FALCONRY)  # in budget (6 messages): its messages are added
    assert wide[:2] == FALCONRY[:2]  # below the query's own hits
    narrow = [
        h.row.text
        for h in await search(
            index, "falcon", 10, Tuning(context=0.0, session=0.0, speaker=0.0, feedback_postings=5)
        )
    ]
    assert narrow == FALCONRY[:2] or narrow == FALCONRY[1::-1]  # "hood" left out whole


async def test_the_query_keeps_its_rarest_term_past_the_budget(db: Database) -> None:
    index = await _index(db, FALCONRY)
    only = Tuning(postings=2, feedback=0.0)
    got = [h.row.text for h in await search(index, "hood falcon", 10, only)]
    assert set(got) == set(FALCONRY[:2])  # falcon (2 messages) kept, hood (6) over budget
    got = [h.row.text for h in await search(index, "hood", 10, Tuning(postings=1, feedback=0.0))]
    assert len(got) == 1  # over budget alone: kept, and only the newest match is scored
    assert got == [FALCONRY[-1]]


async def test_a_named_speaker_is_who_said_it_not_a_word_to_find(db: Database) -> None:
    """In "What did Caroline say about the hike?" the name picks the speaker: the other
    person's messages that address her by name are not what was asked for."""
    index = RecallIndex(db, "t")
    said = [
        ("Melanie", "Caroline, how was the hike?"),
        ("Caroline", "The hike was long, steep and lovely, we saw two eagles."),
        ("Melanie", "Caroline! Our hike club meets again on Sunday, Caroline."),
        ("Caroline", "I baked bread this morning."),
    ]
    await index.add(
        Message("talk", str(i), "user", text, 1_000 + i, "web", name)
        for i, (name, text) in enumerate(said)
    )
    assert await index.speaker_terms() == {"carolin", "melani"}
    near = Tuning(context=0.0, session=0.0)  # the messages alone, not their neighbours
    hits = await search(index, "What did Caroline say about the hike?", 3, near)
    assert [h.row.text for h in hits] == [said[1][1], said[0][1], said[2][1]]


async def test_a_file_made_before_the_speakers_table_learns_its_names_at_the_move(
    tmp_path: Path, db: Database
) -> None:
    dirs = TenantDirs.of(tmp_path, "t")
    path = legacy_path(dirs)
    old_index(path, [Message("talk", "1", "user", "hello there", 1_000, "web", "Jo Müller")])
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE speakers")  # as a file from before it
    conn.close()
    indexer = Indexer(db)
    index = await indexer.index(dirs)
    assert await index.speaker_terms() == {"jo", "muller"}
    await index.add([Message("talk", "2", "assistant", "hi Jo", 2_000, "web", "Roost")])
    assert await index.speaker_terms() == {"jo", "muller", "roost"}


async def test_retention_forgets_a_name_no_kept_message_carries(db: Database) -> None:
    index = RecallIndex(db, "t")
    await index.add(
        [
            Message("talk", "1", "user", "old violin lesson", 1_000, "web", "Ada"),
            Message("talk", "2", "user", "new violin", 9_000, "web", "Bo"),
        ]
    )
    assert await index.speaker_terms() == {"ada", "bo"}
    assert await index.delete_before(5_000) == 1
    assert await index.speaker_terms() == {"bo"}
