"""A turn's end is ONE transaction (`TurnRunner._end`): its usage count, its session append
and its turn-log row commit together, one job on SQLite's writer; counted, statement by
statement, on the writer's connection."""

from __future__ import annotations

import sqlite3

import pytest

from bridge.app.roost import Roost
from bridge.core.turn import NOT_STORED
from bridge.skills.grades import TurnLog
from bridge.storage.errors import StorageError
from tests.conftest import web_msg


def transactions(statements: list[str]) -> list[list[str]]:
    """The statements between each BEGIN and its COMMIT."""
    found: list[list[str]] = []
    for sql in statements:
        if sql.startswith("BEGIN"):
            found.append([])
        elif sql.startswith("COMMIT"):
            continue
        elif found:
            found[-1].append(sql)
    return found


def starts(statements: list[str], prefix: str) -> int:
    return sum(1 for s in statements if s.lstrip().startswith(prefix))


async def test_a_turns_end_is_one_transaction(roost: Roost) -> None:
    indexer = roost.core._turns._exchanges
    await roost.core.handle(web_msg("hello", 1))  # the tenant made, a first turn logged
    seen: list[str] = []

    def trace(on: bool) -> object:
        return lambda c: sqlite3.Connection.set_trace_callback(c, seen.append if on else None)

    await roost.database.write(trace(True))
    try:
        await roost.core.handle(web_msg("thanks, that helped", 2))
        if indexer is not None:
            await indexer.settled()
    finally:
        await roost.database.write(trace(False))
    ends = [t for t in transactions(seen) if starts(t, "INSERT INTO sessions")]
    assert len(ends) == 1
    assert [starts(ends[0], p) for p in ("INSERT INTO token_usage", "INSERT INTO turn_log")] == [
        1,
        1,
    ]
    assert starts(seen, "INSERT INTO token_usage") == 1  # counted once
    assert starts(seen, "INSERT INTO turn_log") == 1
    assert starts(seen, "UPDATE turn_log") == 1  # the grading claim, before the model


async def test_a_turn_not_stored_still_counts_once_and_logs_its_turn(
    roost: Roost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the end's unit cannot commit (the exchange unstored: the answer says so), the
    usage count and the turn-log row are written each alone: counted once."""
    sessions = roost.core._turns.sessions

    async def unwritable(*args: object, **kwargs: object) -> None:
        raise StorageError("the disk is full")

    await roost.core.handle(web_msg("hello", 1))
    monkeypatch.setattr(sessions, "append", unwritable)
    reply = await roost.core.handle(web_msg("and again", 2))
    assert reply is not None and NOT_STORED in reply.text
    turns = await roost.database.fetch_value("SELECT SUM(turns) FROM token_usage")
    assert int(turns) == 2
    last = await TurnLog(roost.database).last("local", "web", "c1")
    assert last is not None and last.msg_id == web_msg("and again", 2).msg_id
