"""Every text a SQLite home keeps in its tables, for tests that look for what must not be kept.

Every table is read, plain: SQLite's text index keeps its terms in plain
tables (`storage_fts_docs` bodies, `storage_fts_postings` and `storage_fts_df`
terms), so a term kept there is found here. A table that cannot be read fails
(a contentless FTS5 table would hide its terms: there is none).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


def table_texts(path: Path) -> dict[str, list[str]]:
    """Each table of the database at `path` with the text values of its rows."""
    db = sqlite3.connect(path)
    try:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out: dict[str, list[str]] = {}
        for table in names:
            rows = db.execute(f'SELECT * FROM "{table}"')
            out[table] = [v for row in rows for v in row if isinstance(v, str)]
        return out
    finally:
        db.close()


def stored_text(home: Path) -> str:
    """Every text of every table of `home`'s roost.db, one per line."""
    return "\n".join(v for texts in table_texts(home / "roost.db").values() for v in texts)
