"""Units: a few statements that commit together, written once for both backends.

A unit is a generator that yields `Step`s (a statement and how to run it:
`execute`, `execute_many`, `fetch_one`, `fetch_all` below) and is sent each
step's result back (the changed-row count, None, a row or None, the rows);
what it returns is the unit's result. Between steps it is plain Python on
the rows it was given: it must not await, and touch nothing but its own
values (on SQLite it runs on the writer's thread). Units compose with
`yield from`.

`Database.atomic(unit)` runs one in a transaction: SQLite as ONE job on its
writer (BEGIN IMMEDIATE, the steps, COMMIT: one thread hop, and no
transaction held open across an await of the event loop, which would hold
the write lock while other tasks wait for it); PostgreSQL inside
`transaction()`, one round trip per step (`drive`). An exception from a step
or from the unit rolls the whole unit back. `atomic` also takes a function
that makes the unit (`Made`, e.g. `partial(appended, ...)`): SQLite may then
run it on the caller's thread when its writer is idle, under a budget of
SQLite steps, and make it again for the writer's thread when it ran past the
budget (rolled back: nothing of it stays), so it must be a pure function of
its arguments (`made`). `together` makes one unit of several (a turn's end:
its usage, its session append and its turn-log row commit as one).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from functools import partial
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

from bridge.storage.placeholders import Params

T = TypeVar("T")
Kind = Literal["execute", "many", "one", "all"]


class Step(NamedTuple):
    """One statement of a unit and how to run it (a tuple: made for every statement of
    every unit, at half a frozen dataclass's cost)."""

    kind: Kind
    sql: str
    params: Any = None  # Params, or an iterable of them for "many"


Unit = Generator[Step, Any, T]
Made = Callable[[], Unit[T]]  # makes the unit again each time it is called


def made(unit: Unit[T] | Made[T]) -> Unit[T]:
    """The unit `atomic` was given, or the one its function makes."""
    return unit if isinstance(unit, Generator) else unit()


def together(first: Made[T], *more: Made[Any]) -> Made[T]:
    """One unit of `first` and then each of `more` (all commit or none); its result:
    `first`'s. Made again whole each time it is called, like its parts."""
    return partial(_together, first, more)


def _together(first: Made[T], more: tuple[Made[Any], ...]) -> Unit[T]:
    result = yield from first()
    for unit in more:
        yield from unit()
    return result


def execute(sql: str, params: Params = None) -> Step:
    """A statement; sent back: how many rows it changed."""
    return Step("execute", sql, params)


def execute_many(sql: str, rows: Iterable[Params]) -> Step:
    """One statement for each of `rows`; sent back: None."""
    return Step("many", sql, list(rows))


def fetch_one(sql: str, params: Params = None) -> Step:
    """Sent back: the first row, or None (every row is read: RETURNING runs to its end)."""
    return Step("one", sql, params)


def fetch_all(sql: str, params: Params = None) -> Step:
    """Sent back: the rows, a list of tuples."""
    return Step("all", sql, params)


class Statements(Protocol):
    """What `drive` runs steps on (a `bridge.storage.protocol.Database`)."""

    async def execute(self, sql: str, params: Params = None) -> int: ...

    async def execute_many(self, sql: str, rows: Iterable[Params]) -> None: ...

    async def fetch_one(self, sql: str, params: Params = None) -> Any: ...

    async def fetch_all(self, sql: str, params: Params = None) -> Any: ...


async def drive(db: Statements, unit: Unit[T]) -> T:
    """Run `unit`'s steps one by one through `db` (the caller holds the transaction)."""
    result: Any = None
    while True:
        try:
            step = unit.send(result)
        except StopIteration as stop:
            value: T = stop.value
            return value
        try:
            result = await _run(db, step)
        except BaseException:
            unit.close()
            raise


async def _run(db: Statements, step: Step) -> Any:
    if step.kind == "execute":
        return await db.execute(step.sql, step.params)
    if step.kind == "many":
        return await db.execute_many(step.sql, step.params)
    if step.kind == "one":
        return await db.fetch_one(step.sql, step.params)
    return await db.fetch_all(step.sql, step.params)
