"""A unit's steps (`bridge.storage.units`) run on one sqlite3 connection, on its thread.

`run_steps(conn, unit)` sends each step's result back into the unit and
returns what the unit returns; it opens no transaction. `run_unit` runs one in
a transaction of its own (BEGIN IMMEDIATE ... COMMIT: `SqliteDatabase`'s jobs, a
writer group's unit run alone); `begin` and `rollback` are the two ends every
transaction on the writer shares (the text index's own writes: `_atomic`). A
failing step closes the unit and raises.
"""

from __future__ import annotations

import sqlite3
from typing import Any, TypeVar

from bridge.storage.placeholders import translate, translate_many
from bridge.storage.units import Step, Unit

T = TypeVar("T")


def run_steps(conn: sqlite3.Connection, unit: Unit[T]) -> T:
    """Every step of `unit` on `conn`, in order; the unit's result."""
    result: Any = None
    while True:
        try:
            step = unit.send(result)
        except StopIteration as stop:
            value: T = stop.value
            return value
        try:
            result = run_step(conn, step)
        except BaseException:
            unit.close()
            raise


def run_step(conn: sqlite3.Connection, step: Step) -> Any:
    """One step; its result as `bridge.storage.units` says."""
    if step.kind == "many":
        if step.params:
            conn.executemany(*translate_many(step.sql, step.params, "qmark"))
        return None
    text, args = translate(step.sql, step.params, "qmark")
    cursor = conn.execute(text, args)
    if step.kind == "execute":
        return max(cursor.rowcount, 0)
    rows = cursor.fetchall()
    if step.kind == "one":
        return rows[0] if rows else None
    return rows


def run_unit(conn: sqlite3.Connection, unit: Unit[T]) -> T:
    """`unit` in a transaction of its own; rolled back whole when any of it fails."""
    begin(conn)
    try:
        value = run_steps(conn, unit)
        commit(conn)
    except BaseException:
        unit.close()
        rollback(conn)  # SQLITE_FULL may have rolled it back already
        raise
    return value


def commit(conn: sqlite3.Connection, sql: str = "COMMIT") -> None:
    """COMMIT. SQLite calls the progress handler (an inline job's budget,
    `Worker.try_inline`) once more as a statement returns, after its work is done: a
    COMMIT can report "interrupted" when it has committed. The transaction is closed
    then, and that is the commit's success: raised, the unit would be run again and
    stored twice (atk39 #3). Interrupted before it committed, the transaction is open
    and the error is raised (rolled back, run again)."""
    try:
        conn.execute(sql)
    except sqlite3.OperationalError as exc:
        if str(exc) != "interrupted" or conn.in_transaction:
            raise


def begin(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:  # a transaction a cancelled task left: never build on it
        conn.execute("ROLLBACK")
    conn.execute("BEGIN IMMEDIATE")


def rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
