"""A home's roost.db with rows in every table of the schema, for the copy's tests and bench.

`fill` writes `n` rows into each table `db.tables()` finds (a table added by a
later migration is filled too), values made from each column's declared
type: INTEGER -> ints past 2**31 (times in ms), REAL -> fractions, BLOB ->
bytes (a NUL and 0xff among them), TEXT ->
non-ASCII text with quotes; NULL in every third row of a nullable column.
A column with a CHECK takes an allowed value (`ALLOWED`). `big` extra rows
go into each of `big_tables` (a long conversation). Text indexes: one per
tenant of two tenants, `docs` documents each.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from bridge.storage.protocol import Database

ALLOWED = {
    ("jobs", "kind"): ("reminder", "turn", "tool"),
    ("jobs", "state"): ("active", "paused", "done"),
    ("outbox", "state"): ("queued", "delivered", "dead"),
    ("channel_inbox", "state"): ("new", "working", "done", "dropped"),
    ("outbox_parts", "state"): ("sent", "draft", "unknown"),
}


def _columns(path: Path, table: str) -> list[tuple[str, str, bool, int]]:
    """(name, declared type, NOT NULL, pk position) of each column."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    finally:
        conn.close()
    return [(str(r[1]), str(r[2]).upper(), bool(r[3]), int(r[5])) for r in rows]


def value(table: str, column: str, kind: str, notnull: bool, i: int) -> Any:
    allowed = ALLOWED.get((table, column))
    if allowed is not None:
        return allowed[i % len(allowed)]
    if not notnull and i % 3 == 2:
        return None
    if column == "archived_at":  # conversations: one current (NULL) per chat at most
        return 1_700_000_000.25 + i
    if "INT" in kind:
        return 3_000_000_000 + i * 7
    if "REAL" in kind:
        return 1_700_000_000.5 + i / 8
    if "BLOB" in kind:
        return bytes([i % 256, 0, 255]) + f"{table}.{column} #{i}".encode()
    return f"{table}.{column} #{i} ‘Grüße’ \"q\" 'x' 🦉"


async def fill(
    db: Database,
    path: Path,
    n: int = 20,
    *,
    big: int = 0,
    big_tables: tuple[str, ...] = ("session_messages",),
    docs: int = 30,
) -> None:
    for table in sorted(await db.tables()):
        cols = _columns(path, table)
        names = [c[0] for c in cols]
        rows = [
            tuple(
                value(table, name, kind, notnull or pk > 0, i) for name, kind, notnull, pk in cols
            )
            for i in range(n + (big if table in big_tables else 0))
        ]
        marks = ", ".join("?" * len(names))
        quoted = ", ".join(f'"{c}"' for c in names)
        await db.execute_many(f'INSERT INTO "{table}" ({quoted}) VALUES ({marks})', rows)
    for tenant in ("alice", "bob"):
        index = db.text_index("recall", tenant)
        for d in range(docs):
            await index.add(d * 3 + 1, f"Der Kaffee #{d} ist heiß, {tenant}: Straße ﬁne ÉTÉ")
