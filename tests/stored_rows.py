"""Every text a SQLite home keeps in its tables, for tests that look for what must not be kept.

A contentless FTS5 table (SQLite's shared text index, `storage_fts_text`)
cannot be scanned: it keeps no text of its own, only the postings of the
bodies stored in `storage_fts_docs`, which are read here, as are its terms
through the `fts5vocab` tables. Any other table that cannot be read fails.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


def _contentless(db: sqlite3.Connection, table: str) -> bool:
    row = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    sql = str(row[0] or "").replace(" ", "").lower() if row else ""
    return "usingfts5(" in sql and "content=''" in sql


def table_texts(path: Path) -> dict[str, list[str]]:
    """Each table of the database at `path` with the text values of its rows."""
    db = sqlite3.connect(path)
    try:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out: dict[str, list[str]] = {}
        for table in names:
            if _contentless(db, table):
                continue
            rows = db.execute(f'SELECT * FROM "{table}"')
            out[table] = [v for row in rows for v in row if isinstance(v, str)]
        return out
    finally:
        db.close()
