"""A turn's end is ONE transaction (`TurnRunner._end`): its usage count, its session append
and its turn-log row commit together, one job on SQLite's writer; counted, statement by
statement, on the writer's connection."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from bridge.app.roost import Roost
from bridge.core.turn import NOT_STORED
from bridge.skills.grades import TurnLog
from bridge.storage.errors import StorageError
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import BackendError
from tests.conftest import ScriptedBackend, web_msg
from tests.waits import until


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
    if indexer is not None:  # its recall indexing writes on its own: not this turn's
        await indexer.settled()  # (on a loaded machine it came after the trace was on)
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
    # the previous turn's graded mark would be in the end's unit, before this turn's row
    # that replaces it (one row per chat): it is left out, and no write waits before the model
    assert starts(seen, "UPDATE turn_log") == 0
    assert starts(transactions(seen)[0], "INSERT INTO sessions") == 1  # the turn's first write


async def test_a_turn_is_graded_once_when_the_next_message_fails_and_is_sent_again(
    roost: Roost,
) -> None:
    """The graded mark of the previous turn is written even when the turn that graded it has
    no end's unit (its model failed): the same message sent again grades nothing."""
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    backend.steps[:] = ["Here is the list.", BackendError("unavailable", "down"), "Better now."]
    await roost.core.handle(web_msg("make me a list", 1))
    failed = await roost.core.handle(web_msg("no, that's wrong", 2))
    assert failed is not None and failed.kind == "error"
    await roost.core.handle(web_msg("no, that's wrong", 3))  # sent again
    audit = getattr(roost.audit, "inner", roost.audit)  # under the metrics' counting sink
    assert isinstance(audit, MemoryAudit)
    graded = [e[2] for e in audit.events if e[0] == "outcome.graded"]
    assert [(g["prev_run_id"], g["msg_id"]) for g in graded] == [("m1", "m2")]
    last = await TurnLog(roost.database).last("local", "web", "c1")
    assert last is not None and (last.msg_id, last.graded) == ("m3", False)


async def test_a_stopped_or_cancelled_turn_marks_the_turn_it_graded(roost: Roost) -> None:
    """A turn cancelled mid-model (shutdown) ends without its end's unit: the previous turn
    is marked graded all the same."""
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    await roost.core.handle(web_msg("make me a list", 1))
    backend.delay = 30.0  # the model never answers: the turn is cancelled while it waits
    turn = asyncio.ensure_future(roost.core.handle(web_msg("no, that's wrong", 2)))
    await until(lambda: len(backend.requests) == 2, "the second turn asks the model")
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    last = await TurnLog(roost.database).last("local", "web", "c1")
    assert last is not None and (last.msg_id, last.graded) == ("m1", True)


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
