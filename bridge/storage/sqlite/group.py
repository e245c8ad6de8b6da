"""Units queued back to back on SQLite's writer thread, committed together.

A unit given to `Database.atomic` as the function that makes it (a turn's
end) and queued on the writer (it was busy) is a `Together` job. When the
writer's thread takes one and more wait behind it, it runs them all (up to
`MAX_UNITS`, in queue order) in ONE transaction: each unit in a savepoint of
its own, then one COMMIT, and only then is each caller told (`run_group`): its
rows are committed, as durable as any commit, before it hears so. A unit that
fails is rolled back to its savepoint and only its caller gets the error; the
others commit. When SQLite ends the whole transaction instead (a full disk
can) or the COMMIT fails, every unit that had not failed is made again and run
alone, in a transaction of its own, so a caller only ever hears its own unit's
outcome. Why: each job on the thread is a BEGIN and a COMMIT (the COMMIT writes
every page the unit changed to the WAL: the turn's end about 0.1 ms of the
writer's CPU), and a GIL hand-off with the loop for each statement; units
queued together share one BEGIN, one COMMIT, their shared pages (the chats'
rows, the day's usage row) written once, and one wake-up of the loop.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from bridge.storage.sqlite.steps import run_steps
from bridge.storage.units import Made

MAX_UNITS = 64  # units in one transaction at most
Outcome = tuple[bool, Any]  # (True, the unit's result) or (False, its exception)


class Together:
    """A writer job: the unit `make` makes, in a transaction of its own when run alone
    (called with the connection), or with the units queued after it (`run_group`)."""

    __slots__ = ("make",)

    def __init__(self, make: Made[Any]) -> None:
        self.make = make

    def __call__(self, conn: sqlite3.Connection) -> Any:
        return alone(conn, self.make)


def alone(conn: sqlite3.Connection, make: Made[Any]) -> Any:
    """The unit in a transaction of its own (BEGIN IMMEDIATE ... COMMIT)."""
    begin(conn)
    unit = make()
    try:
        value = run_steps(conn, unit)
        conn.execute("COMMIT")
    except BaseException:
        unit.close()
        rollback(conn)  # SQLITE_FULL may have rolled it back already
        raise
    return value


def run_group(conn: sqlite3.Connection, units: list[Made[Any]]) -> list[Outcome]:
    """Each unit's outcome, in order: all in one transaction, each in a savepoint; the
    ones the transaction's end took with it run again alone."""
    if len(units) == 1:
        return [_alone(conn, units[0])]
    outcomes: list[Outcome | None] = [None] * len(units)
    try:
        begin(conn)
        for at, make in enumerate(units):
            conn.execute("SAVEPOINT unit")
            try:
                value = run_steps(conn, make())
            except BaseException as exc:  # its caller's, told below
                outcomes[at] = (False, exc)
                if not conn.in_transaction:  # SQLite ended all of it
                    break
                conn.execute("ROLLBACK TO unit")
                conn.execute("RELEASE unit")
                continue
            conn.execute("RELEASE unit")
            outcomes[at] = (True, value)
        if conn.in_transaction:
            conn.execute("COMMIT")
            return [o for o in outcomes if o is not None]  # every unit ran
    except BaseException:  # the COMMIT (or a SAVEPOINT) refused
        rollback(conn)
    # nothing of the group stays: each unit that did not fail, alone
    return [
        o if o is not None and not o[0] else _alone(conn, m)
        for o, m in zip(outcomes, units, strict=True)
    ]


def _alone(conn: sqlite3.Connection, make: Made[Any]) -> Outcome:
    try:
        return True, alone(conn, make)
    except BaseException as exc:  # its caller's
        return False, exc


def begin(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:  # a transaction a cancelled task left: never build on it
        conn.execute("ROLLBACK")
    conn.execute("BEGIN IMMEDIATE")


def rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
