"""A SQLite home of either earlier text index layout is moved into the postings tables when
the database opens: one FTS5 table per index and tenant (listed in `storage_fts`), or one
shared contentless FTS5 table with key-prefixed terms (`storage_fts_text`). The same
search results, the old tables gone, forget and copy still find a tenant's index."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from bridge.storage import fts, tenants
from bridge.storage.sqlite.database import SqliteDatabase
from tests.storage.test_fts import _corpus

# the shared layout as the code before the postings tables wrote it
SHARED = (
    "CREATE TABLE storage_fts_stats (key INTEGER PRIMARY KEY, name TEXT NOT NULL, "
    "tenant TEXT NOT NULL, docs INTEGER NOT NULL, tokens INTEGER NOT NULL, UNIQUE (name, tenant))",
    "CREATE TABLE storage_fts_docs (id INTEGER PRIMARY KEY, key INTEGER NOT NULL, "
    "doc INTEGER NOT NULL, len INTEGER NOT NULL, body TEXT NOT NULL, UNIQUE (key, doc))",
    "CREATE VIRTUAL TABLE storage_fts_text USING fts5(body, content='', columnsize=0, "
    "tokenize=\"ascii tokenchars '_'\")",
    "CREATE VIRTUAL TABLE storage_fts_terms USING fts5vocab(storage_fts_text, row)",
    "CREATE VIRTUAL TABLE storage_fts_hits USING fts5vocab(storage_fts_text, instance)",
    "CREATE TRIGGER storage_fts_docs_gone AFTER DELETE ON storage_fts_docs BEGIN "
    "INSERT INTO storage_fts_text (storage_fts_text, rowid, body) "
    "VALUES ('delete', old.id, old.body); "
    "UPDATE storage_fts_stats SET docs = docs - 1, tokens = tokens - old.len "
    "WHERE key = old.key; END",
)
QUERIES = [["w0", "w5"], ["w1"], ["w3", "w7", "w50"], ["nothing"], ["w100", "w2"]]


def _old_table(name: str, tenant: str) -> str:
    """The old layout's table name of (index, tenant)."""
    return "storage_fts_" + hashlib.sha256(f"{name}\0{tenant}".encode()).hexdigest()[:24]


def _old_home(
    path: Path, indexes: dict[tuple[str, str], dict[int, str]]
) -> dict[tuple[str, str, tuple[str, ...]], list[tuple[int, float]]]:
    """Write the old layout as the old code did; its search results (FTS5's own bm25)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "CREATE TABLE storage_fts (tbl TEXT PRIMARY KEY, name TEXT NOT NULL, tenant TEXT NOT NULL)"
    )
    results: dict[tuple[str, str, tuple[str, ...]], list[tuple[int, float]]] = {}
    for (name, tenant), docs in indexes.items():
        tbl = _old_table(name, tenant)
        conn.execute(f"CREATE VIRTUAL TABLE {tbl} USING fts5(body, tokenize='ascii')")
        conn.execute("INSERT INTO storage_fts VALUES (?, ?, ?)", (tbl, name, tenant))
        conn.executemany(
            f"INSERT INTO {tbl} (rowid, body) VALUES (?, ?)",
            [(d, " ".join(fts.terms(t))) for d, t in docs.items()],
        )
        for q in QUERIES:
            sql = (
                f"SELECT rowid, round(-bm25({tbl}), {fts.SCORE_DIGITS}) AS s FROM {tbl} "
                f"WHERE {tbl} MATCH ? ORDER BY s DESC, rowid LIMIT 50"
            )
            got = conn.execute(sql, (fts.fts5_any(fts.query_terms(q)),)).fetchall()
            results[(name, tenant, tuple(q))] = [(int(d), float(s)) for d, s in got]
    conn.close()
    return results


async def _finds_what_it_found(
    db: SqliteDatabase,
    before: dict[tuple[str, str, tuple[str, ...]], list[tuple[int, float]]],
    indexes: dict[tuple[str, str], dict[int, str]],
) -> None:
    """Every search ranks as before the move; every index holds its documents' terms."""
    for (name, tenant, q), hits in before.items():
        assert await db.text_index(name, tenant).search(list(q), 50) == hits, (name, q)
    for (name, tenant), docs in indexes.items():
        index = db.text_index(name, tenant)
        assert await index.count() == len(docs)
        got = await index.documents(0, 1000)
        assert got == [(d, " ".join(fts.terms(t))) for d, t in sorted(docs.items())]


async def test_an_old_home_is_moved_and_searches_the_same(tmp_path: Path) -> None:
    corpus = _corpus(200)
    indexes = {
        ("recall", "alice"): {i + 1: t for i, t in enumerate(corpus[:120])},
        ("recall", "bob"): {i * 7 + 3: t for i, t in enumerate(corpus[120:])},
        ("notes", "alice"): {1: "w0 w0 secret", 2: "w1 w5"},
    }
    path = tmp_path / "roost.db"
    before = _old_home(path, indexes)
    db = await SqliteDatabase.open(path)
    try:
        await db.migrate([])
        await _finds_what_it_found(db, before, indexes)
        left = await db.fetch_all(
            "SELECT name FROM sqlite_master WHERE name = 'storage_fts' OR name LIKE ?",
            (_old_table("recall", "alice")[:14] + "%",),
        )
        assert left == []
        assert await db.text_indexes() == sorted(indexes)
        await tenants.forget(db, "alice")
        assert await db.text_index_names("alice") == []
        assert await db.text_index("recall", "alice").search(["w0"], 5) == []
        assert (
            await db.text_index("recall", "bob").search(["w0", "w5"], 50)
            == (before[("recall", "bob", ("w0", "w5"))])
        )
        await db.migrate([])  # opened again: nothing to move
        assert await db.text_indexes() == [("recall", "bob")]
    finally:
        await db.aclose()


def _shared_home(path: Path, indexes: dict[tuple[str, str], dict[int, str]]) -> None:
    """Write the shared contentless FTS5 layout as the code before the postings did."""
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in SHARED:
        conn.execute(statement)
    for key, ((name, tenant), docs) in enumerate(indexes.items(), 1):
        found = [(d, fts.terms(t)) for d, t in docs.items()]
        total = sum(len(t) for _, t in found)
        conn.execute(
            "INSERT INTO storage_fts_stats VALUES (?, ?, ?, ?, ?)",
            (key, name, tenant, len(found), total),
        )
        conn.executemany(
            "INSERT INTO storage_fts_docs (key, doc, len, body) VALUES (?, ?, ?, ?)",
            [(key, d, len(t), " ".join(f"{key}_{x}" for x in t)) for d, t in found],
        )
    conn.execute("INSERT INTO storage_fts_text (rowid, body) SELECT id, body FROM storage_fts_docs")
    conn.execute("DELETE FROM storage_fts_docs WHERE key = 1 AND doc = 2")  # its trigger
    conn.close()


async def test_a_shared_fts5_home_is_moved_and_searches_the_same(tmp_path: Path) -> None:
    corpus = _corpus(200)
    indexes = {
        ("recall", "alice"): {i + 1: t for i, t in enumerate(corpus[:120]) if i != 1},
        ("recall", "bob"): {i * 7 + 3: t for i, t in enumerate(corpus[120:])},
        ("notes", "alice"): {1: "w0 w0 secret", 2: "w1 w5"},
    }
    before = _old_home(tmp_path / "per_tenant.db", indexes)  # FTS5's bm25, tenant by tenant
    path = tmp_path / "roost.db"
    # key 1's doc 2 is written, then deleted there (its old trigger): it stays gone
    first = {**indexes, ("recall", "alice"): {**indexes[("recall", "alice")], 2: "w0 gone"}}
    _shared_home(path, first)
    db = await SqliteDatabase.open(path)
    try:
        await db.migrate([])
        await _finds_what_it_found(db, before, indexes)
        left = await db.fetch_all(
            "SELECT name FROM sqlite_master WHERE name IN "
            "('storage_fts_text', 'storage_fts_terms', 'storage_fts_hits', 'storage_fts_docs_gone')"
        )
        assert left == []
        bob = db.text_index("recall", "bob")
        assert await bob.doc_freq(["w0", "nothing"], 1000) == {
            "w0": sum("w0" in fts.terms(t) for t in indexes[("recall", "bob")].values()),
            "nothing": 0,
        }
        assert await bob.remove(3)  # moved rows are removed as new ones are
        assert await bob.count() == len(indexes[("recall", "bob")]) - 1
        await tenants.forget(db, "alice")
        assert await db.text_indexes() == [("recall", "bob")]
        await db.migrate([])  # opened again: nothing to move
        assert await db.text_indexes() == [("recall", "bob")]
    finally:
        await db.aclose()
