"""Units queued back to back on SQLite's writer thread, committed together.

A unit given to `Database.atomic` as the function that makes it (a turn's
end) and queued on the writer (it was busy) is a `Together` job. When the
writer's thread takes one and more wait behind it, it runs them all (up to
`MAX_UNITS`, in queue order) in ONE transaction with one COMMIT, and only then
is each caller told (`run_group`): its rows are committed, as durable as any
commit, before it hears so. When any of it fails (a unit's statement or its
own Python, the COMMIT: a deferred constraint, a full disk; a unit that ends
the transaction) nothing of it stays and each unit runs again alone, in
order, in a transaction of its own (units are pure functions of their
arguments: made again, each writes what it wrote the first time): each
caller gets the outcome its unit has by itself, the others are stored. No
savepoints: a unit costs its own statements only. Why: each job on the
thread is a BEGIN and a COMMIT (the COMMIT writes every page the unit changed
to the WAL: the turn's end about 0.1 ms of the writer's CPU), each statement a
GIL hand-off with the loop; units queued together share one BEGIN, one
COMMIT, their shared pages (the day's usage row, the chats' rows) written once,
and one wake-up of the loop.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from bridge.storage.sqlite.steps import begin, commit, rollback, run_steps, run_unit
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
    """The unit `make` makes, in a transaction of its own."""
    return run_unit(conn, make())


def run_group(conn: sqlite3.Connection, units: list[Made[Any]]) -> tuple[list[Outcome], bool]:
    """Each unit's outcome, in order, and whether they shared one commit: all in one
    transaction; when any of it fails (a unit, or the COMMIT), nothing of it stays and
    each unit runs again alone, in order, so each caller gets its unit's own outcome."""
    if len(units) > 1:
        try:
            begin(conn)
            values = [run_steps(conn, make()) for make in units]
            commit(conn)
            return [(True, value) for value in values], True
        except BaseException:  # one of them: which one, running them alone tells
            rollback(conn)
    return [_alone(conn, make) for make in units], False


def _alone(conn: sqlite3.Connection, make: Made[Any]) -> Outcome:
    try:
        return True, alone(conn, make)
    except BaseException as exc:  # its caller's
        return False, exc
