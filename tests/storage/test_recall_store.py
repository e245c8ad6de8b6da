"""The recall index (`bridge.recall.index`) on both backends: rows per tenant numbered in the
order stored, terms in the text index `recall` ranked as the old FTS5 files ranked them,
neighbours, retention, vectors, forget, the move of an old index file, two writers at once;
a batch's rows and terms one transaction."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.recall.evaluate import OWN_DIR, load_set, loaded
from bridge.recall.index import (
    CHUNK,
    ROW_COUNTS,
    TEXT_INDEX,
    Message,
    RecallIndex,
    legacy_path,
    padded,
)
from bridge.recall.indexer import Indexer
from bridge.recall.search import search
from bridge.recall.terms import query_terms
from bridge.recall.vectors import Dense, count, model_of, pending, store, use_model
from bridge.storage import tenants, units
from bridge.storage.errors import IntegrityError, StorageError
from bridge.storage.protocol import Database
from bridge.storage.units import Unit
from bridge.types.tenant_dirs import TenantDirs
from tests.recall.legacy_files import old_bm25, old_index
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced

TALK = [
    ("Ann", "user", "we planted tomatoes and basil in the raised bed"),
    ("", "assistant", "basil likes the sun and warm nights"),
    ("Ann", "user", "the tram to the harbour was late again"),
    ("Zelda", "user", "Zelda said the basil grew well, the tomatoes too"),
    ("Ann", "user", "harbour tram, late, late, late"),
    ("", "assistant", "a raised bed drains well"),
]


def talk(conv: str = "web:a") -> list[Message]:
    return [
        Message(conv, str(i), role, text, 1_000 * (i + 1), "web", name)
        for i, (name, role, text) in enumerate(TALK)
    ]


async def test_rows_are_numbered_per_tenant_and_a_known_message_adds_nothing(
    db: Database,
) -> None:
    alice, bob = RecallIndex(db, "alice"), RecallIndex(db, "bob")
    assert await alice.add(talk()) == 6
    assert await bob.add(talk()[:2]) == 2
    assert await alice.add([*talk(), *talk("web:b")[:1]]) == 1  # six known, one new
    assert [r.rowid async for r in alice.iter_all()] == list(range(1, 8))
    assert [r.rowid async for r in bob.iter_all()] == [1, 2]
    assert await alice.count() == 7 and await bob.count() == 2
    assert await alice.text.count() == 7 and await bob.text.count() == 2
    # a message twice in one batch counts once
    assert await bob.add([talk("web:z")[0], talk("web:z")[0]]) == 1


async def test_a_padded_batch_numbers_only_its_own_rows(db: Database) -> None:
    """A batch is padded to the next of ROW_COUNTS (a few statement texts, each prepared
    once); the padding is never stored: every size numbers its new rows on from the
    tenant's newest, no gaps, known ones (also in the padding's place) left out."""
    assert [padded(n) for n in (1, 2, 3, 5, 9, 33, 129, 257, CHUNK)] == [
        1, 2, 4, 8, 16, 64, 256, CHUNK, CHUNK
    ]  # fmt: skip
    assert list(ROW_COUNTS) == sorted(ROW_COUNTS) and ROW_COUNTS[-1] == CHUNK
    index, stored = RecallIndex(db, "alice"), 0
    for size in (1, 3, 2, 5, 8, 9, 17):
        batch = [
            Message("web:a", f"{size}-{i}", "user", f"word{i} batch{size}", stored + i, "web")
            for i in range(size)
        ]
        assert await index.add([batch[-1], *batch]) == size  # the last row twice
        stored += size
        assert [r.rowid async for r in index.iter_all()] == list(range(1, stored + 1))
        assert await index.count() == stored and await index.text.count() == stored
    rows = [r async for r in index.iter_all()]
    assert [r.msg_id for r in rows[-17:]] == ["17-16", *(f"17-{i}" for i in range(16))]
    assert all(r.text.startswith("word") for r in rows)


async def test_one_tenants_search_never_reaches_anothers_rows(db: Database) -> None:
    alice, bob = RecallIndex(db, "alice"), RecallIndex(db, "bob")
    await alice.add([Message("web:c", "1", "user", "my sister lives in Porto", 1, "web")])
    await bob.add([Message("web:c", "1", "user", "my brother lives in Oslo", 1, "web")])
    assert [h.row.text for h in await search(alice, "Porto Oslo lives", 5)] == [
        "my sister lives in Porto"
    ]
    assert await search(bob, "sister Porto", 5) == []
    assert (await bob.rows([1]))[1].text == "my brother lives in Oslo"


async def test_the_ranking_is_the_old_two_column_fts5_bm25(db: Database, tmp_path: Path) -> None:
    """Body and speaker's name as one document score exactly what FTS5's bm25() over the two
    columns of the old files scored (both backends)."""
    messages = talk() + talk("web:b")[2:]
    old = tmp_path / "old.sqlite"
    old_index(old, messages)
    index = RecallIndex(db, "t")
    await index.add(messages)
    for query in ("basil", "harbour tram late", "Zelda basil tomatoes", "raised bed sun", "ann"):
        terms = query_terms(query)
        want = [(d, round(s, 9)) for d, s in old_bm25(old, terms)]
        got = [(d, round(s, 9)) for d, s in await index.bm25(terms, 50)]
        assert sorted(got) == sorted(want), query
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)


async def test_neighbours_rows_and_speakers(db: Database) -> None:
    index = RecallIndex(db, "t")
    mixed = [m for pair in zip(talk("web:a"), talk("web:b"), strict=True) for m in pair]
    await index.add(mixed)  # the two chats interleaved: ids 1 (a), 2 (b), 3 (a), ...
    rows = await index.rows([3, 4, 99])
    assert sorted(rows) == [3, 4] and rows[3].conversation == "web:a"
    before, after = await index.neighbours(rows[3], 2, 2)
    assert [r.rowid for r in before] == [1] and [r.rowid for r in after] == [5, 7]
    assert await index.speakers([7]) == {7: (1, "user", "Zelda")}  # web:a is conversation 1
    assert await index.speaker_terms() == {"ann", "zelda"}


async def test_every_message_is_read_back_in_pages(db: Database) -> None:
    index = RecallIndex(db, "t")
    many = [Message("c", str(i), "user", f"note {i}", i, "web") for i in range(CHUNK * 2 + 7)]
    assert await index.add(many) == len(many)
    assert [r.msg_id async for r in index.iter_all()] == [m.msg_id for m in many]
    assert await index.text_bytes() == sum(len(m.text) for m in many)


async def test_retention_takes_rows_terms_vectors_and_unspoken_names(db: Database) -> None:
    index = RecallIndex(db, "t")
    await index.add(talk())
    await use_model(db, "t", "m")
    await store(db, "t", [(rid, b"\x00\x00\x80?") for rid, _ in await pending(db, "t", 0, 10)])
    assert await index.delete_before(4_500) == 4  # the four oldest, Zelda's among them
    assert await index.count() == 2 and await index.text.count() == 2
    assert await count(db, "t") == 2
    assert await index.speaker_terms() == {"ann"}
    assert [h.row.msg_id for h in await search(index, "basil tomatoes", 5)] == []


async def test_vectors_are_per_tenant_and_a_new_model_starts_afresh(db: Database) -> None:
    for tenant in ("t", "u"):
        await RecallIndex(db, tenant).add(talk())
        await use_model(db, tenant, "m1")
        await store(
            db, tenant, [(rid, b"\x00\x00\x80?") for rid, _ in await pending(db, tenant, 0, 9)]
        )
    await store(db, "t", [(99, b"\x00\x00\x80?")])  # no such message: skipped
    assert await count(db, "t") == 6
    assert await use_model(db, "t", "m2") is True
    assert (await count(db, "t"), await count(db, "u")) == (0, 6)
    assert await model_of(db, "u") == "m1"
    dense = Dense()
    await dense.refresh(db, "u")
    assert len(dense) == 6


async def test_forget_drops_the_tenants_rows_and_text_index(db: Database) -> None:
    await RecallIndex(db, "alice").add(talk())
    await RecallIndex(db, "bob").add(talk())
    await use_model(db, "alice", "m")
    assert await db.text_index_names("alice") == [TEXT_INDEX]
    gone = await tenants.forget(db, "alice")
    assert gone["recall_messages"] == 6 and gone["recall_vector_model"] == 1
    assert await db.text_index_names("alice") == []
    assert await RecallIndex(db, "alice").count() == 0
    assert [h.row.msg_id for h in await search(RecallIndex(db, "alice"), "basil", 5)] == []
    assert len(await search(RecallIndex(db, "bob"), "basil", 5)) == 3


async def test_an_old_index_file_moves_into_either_backend(db: Database, tmp_path: Path) -> None:
    dirs = TenantDirs.of(tmp_path, "alice")
    old_index(legacy_path(dirs), talk(), vectors={2: b"\x00\x00\x80?"}, model="m1")
    want = old_bm25(legacy_path(dirs), ["basil", "harbour"])
    index = await Indexer(db).index(dirs)
    assert not legacy_path(dirs).exists()
    assert [(d, round(s, 9)) for d, s in await index.bm25(["basil", "harbour"], 20)] == [
        (d, round(s, 9)) for d, s in want
    ]
    assert (await model_of(db, "alice"), await count(db, "alice")) == ("m1", 1)
    assert await index.add(talk("web:new")[:1]) == 1
    assert [r.rowid async for r in index.iter_all()][-1] == 7


async def test_two_writers_of_one_tenant_at_once_lose_nothing(open_db: OpenDb) -> None:
    """Two connections (two instances), each with writers of their own at once: every
    message stored once under its own id, every conversation under its own id."""
    first, second = await open_db(), await open_db()
    writers = [RecallIndex(db, "t") for db in (first, second) for _ in range(3)]

    async def write(index: RecallIndex, who: int) -> None:
        for n in range(12):
            said = Message(f"w{who}:{n % 3}", str(n), "user", f"note {n} of {who}", n, "web")
            await index.add([said])

    await asyncio.gather(*(write(index, n) for n, index in enumerate(writers)))
    ids = [r.rowid async for r in writers[0].iter_all()]
    assert len(ids) == 6 * 12 == len(set(ids))
    assert await writers[0].text.count() == len(ids)
    convs = await first.fetch_all("SELECT id FROM recall_conversations WHERE tenant = 't'")
    assert len(convs) == 6 * 3 == len({c for (c,) in convs})


async def test_the_own_set_ranks_alike_on_both_backends(pg_url: str, tmp_path: Path) -> None:
    """The eval's ranking contract: the same hits with the same scores on SQLite and
    PostgreSQL (roost's own knowledge-update and temporal cases)."""
    from bridge.storage.postgres import PostgresDatabase
    from bridge.storage.schema import MIGRATIONS

    lite = await open_database(tmp_path / "roost.db")
    pg = await PostgresDatabase.open(pg_url)
    try:
        await pg.migrate(MIGRATIONS)
        for name, messages, questions in load_set(OWN_DIR):
            a, b = (
                await loaded(lite, OWN_DIR, name, messages),
                await loaded(pg, OWN_DIR, name, messages),
            )
            for q in questions:
                on_lite = [(h.row.msg_id, round(h.score, 9)) for h in await search(a, str(q["q"]))]
                on_pg = [(h.row.msg_id, round(h.score, 9)) for h in await search(b, str(q["q"]))]
                assert on_lite == on_pg and on_lite, q["q"]
    finally:
        await lite.aclose()
        await pg.aclose()


def _runs(rows: int) -> int:
    """The statements that write `rows` rows of a text-index table: one of 32 rows per 32,
    then one per power of two of the rest."""
    return rows // 32 + bin(rows % 32).count("1")


async def test_a_turns_pair_is_one_transaction_of_its_rows_and_terms(tmp_path: Path) -> None:
    """A turn's pair in a known chat: ONE job on the writer, BEGIN ... COMMIT around the
    newest id's read and the INSERT, the text index's counts and key, then its 2
    documents, their postings, their terms' counts (each by multi-row statements: one
    per power of two of the rows), and the speaker not seen before; nothing outside it
    (the INSERT `OR IGNORE`, `Dialect.insert_skipping`: no statement journal).
    The retention prune opens no transaction."""
    database, statements = await traced(tmp_path / "roost.db")
    try:
        index = RecallIndex(database, "t")
        await index.add(talk()[:2])  # the first: conversation and speakers made
        statements.clear()
        await index.add(talk()[2:4])  # a turn's pair in a known chat, one new speaker
        written = [s for s in statements if not s.startswith(("PRAGMA", "--"))]
        heads = [s.split()[0].upper() for s in written]
        assert heads[0] == "BEGIN" and heads[-1] == "COMMIT", written
        assert heads.count("BEGIN") == 1 and heads.count("COMMIT") == 1, written
        assert "SAVEPOINT" not in heads
        job = written[1:-1]
        # OR IGNORE: a statement that cannot abort halfway needs no statement journal
        assert job[0].startswith("SELECT COALESCE((SELECT id FROM recall_messages"), job
        assert job[1].startswith("INSERT OR IGNORE INTO recall_messages"), job
        assert job[-1].startswith("INSERT INTO recall_speakers"), job
        assert "'Zelda'" in job[-1] and "'Ann'" not in job[-1], job
        new = "FROM storage_fts_postings WHERE doc IN (3, 4)"
        postings = await database.fetch_value(f"SELECT count(*) {new}")
        terms = await database.fetch_value(f"SELECT count(DISTINCT term) {new}")
        kinds = Counter(s.split()[2] for s in job[2:-1])
        assert kinds == {
            "storage_fts_stats": 1,
            "storage_fts_docs": 1,
            "storage_fts_postings": _runs(postings),
            "storage_fts_df": _runs(terms),
        }, job
        statements.clear()
        await index.delete_before(10**9)
        assert not [s for s in statements if s.split()[0].upper() in ("BEGIN", "SAVEPOINT")]
    finally:
        await database.aclose()


async def test_a_batch_whose_terms_fail_stores_none_of_its_rows(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One transaction a batch, both backends: when its text-index part fails (here a
    statement after the documents' own), none of its messages is stored either (a crash
    there leaves no message without its terms); the next batch numbers on from the last
    stored message and is found."""
    index = RecallIndex(db, "t")
    assert await index.add(talk()[:2]) == 2
    real = index.text.adding

    def failing(docs: Sequence[tuple[int, str]]) -> Unit[None]:
        yield from real(docs)
        yield units.execute("INSERT INTO recall_no_such_table VALUES (1)")

    monkeypatch.setattr(index.text, "adding", failing)
    with pytest.raises(StorageError):
        await index.add(talk()[2:])
    assert await index.count() == await index.text.count() == 2
    assert [r.msg_id async for r in index.iter_all()] == ["0", "1"]
    assert await index.speaker_terms() == frozenset({"ann"})  # Zelda's row went too
    monkeypatch.undo()
    assert await index.add(talk()[2:]) == 4
    assert [r.rowid async for r in index.iter_all()] == list(range(1, 7))
    assert await index.count() == await index.text.count() == 6
    found = await search(index, "harbour tram", 10)
    assert sorted(h.row.text for h in found) == sorted(t for _, _, t in TALK if "harbour" in t)
    assert "zelda" in await index.speaker_terms()


async def test_terms_a_cut_off_prune_left_behind_make_way_for_new_messages(
    db: Database,
) -> None:
    """A retention prune cut off between its DELETE of the rows and the removal of their
    terms leaves terms of ids the next batch numbers again: that batch's transaction
    fails whole, the stale terms go (`drop_stale`), the batch is stored with its own
    terms, and searching the old words finds nothing."""
    index = RecallIndex(db, "t")
    assert await index.add(talk()[:4]) == 4
    await db.execute("DELETE FROM recall_messages WHERE tenant = ? AND id > 2", ("t",))
    assert await index.text.count() == 4  # ids 3 and 4: terms without rows
    fresh = [
        Message("web:a", f"n{i}", "user", f"violin lesson {i}", 9_000 + i, "web") for i in (1, 2, 3)
    ]
    assert await index.add(fresh) == 3
    assert [r.rowid async for r in index.iter_all()] == [1, 2, 3, 4, 5]
    assert await index.count() == await index.text.count() == 5
    assert not await search(index, "harbour", 10)  # the stale terms went
    assert await index.drop_stale() == 0
    assert sorted(h.row.msg_id for h in await search(index, "violin lesson", 10)) == [
        "n1", "n2", "n3"
    ]  # fmt: skip


async def test_add_many_indexes_as_adds_one_by_one_do(db: Database) -> None:
    """`TextIndex.add_many` (one step for a batch's terms) ranks as `add` does, both backends;
    a document indexed already is refused."""
    docs = [(i + 1, text) for i, (_, _, text) in enumerate(TALK)]
    one, many = db.text_index("t1", "a"), db.text_index("t1", "b")
    for doc, text in docs:
        await one.add(doc, text)
    await many.add_many(docs)
    await many.add_many([])
    for query in (["basil"], ["harbour", "late"], ["raised", "sun", "tomatoes"]):
        assert await many.search(query, 10) == await one.search(query, 10)
    assert await many.count() == len(docs)
    with pytest.raises(IntegrityError):
        await many.add_many([(99, "new"), (1, "again")])
