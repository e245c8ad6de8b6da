"""Per-tenant change counts of database tables, kept by the database itself.

The prompt's memo (`bridge.prompt.memo`) reuses what a view read from
`roost.db` (chat settings, style bullets, skill grades) while nothing of the
tenant changed there. `TableChanges.install(conn, tables)` puts TEMP triggers
on the connection (nothing is stored in roost.db, and they go with the
connection) that, after every INSERT, UPDATE and DELETE of a row of those
tables, call back into this process and count one change under (table,
tenant of the row; both tenants for an UPDATE that moves a row). So every
write through this connection is counted, whatever code made it; a write
rolled back is counted too (one needless query later). Commits made through
another connection (another process such as the CLI, or the storage layer's
own connection) are seen through `PRAGMA data_version`, which moves on each.

`version()` reads that once per prompt; `token(version, tables, tenant)` is
what a memo keeps: equal tokens mean no row of those tables of that tenant
changed in between.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable

_TABLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class TableChanges:
    """Counts of changes by (table, tenant) on one connection; see the module."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._counts: dict[tuple[str, str], int] = {}
        self.tables: frozenset[str] = frozenset()

    @classmethod
    def install(cls, conn: sqlite3.Connection, tables: Iterable[str]) -> TableChanges:
        """Count changes of `tables` (each with a `tenant` column) made through `conn`."""
        changes = cls(conn)
        # a name of its own: two instances on one connection count independently
        fn = f"roost_changed_{id(changes):x}"
        conn.create_function(fn, 2, changes._changed)
        counted = []
        for table in dict.fromkeys(tables):
            if not _TABLE.match(table):
                raise ValueError(f"not a table name: {table!r}")
            try:
                for event, rows in (
                    ("INSERT", f"{fn}('{table}', NEW.tenant)"),
                    ("DELETE", f"{fn}('{table}', OLD.tenant)"),
                    ("UPDATE", f"{fn}('{table}', OLD.tenant), {fn}('{table}', NEW.tenant)"),
                ):
                    conn.execute(
                        f"CREATE TEMP TRIGGER {fn}_{table}_{event.lower()} AFTER {event} "
                        f"ON main.{table} BEGIN SELECT {rows}; END"
                    )
            except sqlite3.OperationalError:  # no such table (or column): not counted,
                continue  # so nothing vouches for it and its readers are asked every time
            counted.append(table)
        changes.tables = frozenset(counted)
        return changes

    def _changed(self, table: str, tenant: object) -> None:
        """The triggers' callback: must not raise (it would fail the write)."""
        key = (table, str(tenant))
        self._counts[key] = self._counts.get(key, 0) + 1

    def version(self) -> int:
        """Moves whenever another connection commits to the database."""
        row = self._conn.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def token(self, version: int, tables: Iterable[str], tenant: str) -> tuple[int, ...] | None:
        """What stays equal while no row of `tables` of `tenant` changes (None: a table
        is not counted here, so nothing vouches for it)."""
        counts = self._counts
        out = [version]
        for table in tables:
            if table not in self.tables:
                return None
            out.append(counts.get((table, tenant), 0))
        return tuple(out)
