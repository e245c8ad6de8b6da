"""A durable inbox's answered messages are not answered twice, on both backends.

- A done mark whose write failed (the database away for a moment) is kept and
  written with the next mark, or by `flush` at stop: before, the row stayed
  open and the next start answered the message again.
- `stored_answer`: a row an earlier process left open whose turn the session
  already stored (killed between the turn's end and the done mark) gives that
  answer, so recovery delivers it instead of asking the model again and
  storing the turn twice; a message whose turn was not stored (or whose last
  stored row is not an answer) gives None, and so does another chat's, another
  channel's, or a message id of another message.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.channels.matrix.inbox import MatrixInbox
from bridge.channels.telegram.inbox import UpdateInbox
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database
from tests.storage.test_inbox_store import NOW, message, rows


def telegram(db: Database, owner: str = "p1") -> UpdateInbox:
    return UpdateInbox(db, "telegram:1", owner, clock=lambda: NOW)


async def test_a_failed_mark_is_written_at_stop(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = telegram(db)
    await box.store([message(1, 111, "q1")])
    real = db.execute

    async def away(sql: str, params: Any = None) -> int:
        raise StorageError("the database went away")

    monkeypatch.setattr(db, "execute", away)
    with pytest.raises(StorageError):
        await box.done(1)
    with pytest.raises(StorageError):  # still away at stop: kept, said
        await box.flush()
    assert box.unwritten == 1
    monkeypatch.setattr(db, "execute", real)
    await box.flush()
    assert [s for _, s, _, _ in await rows(db)] == ["done"] and box.unwritten == 0
    assert await telegram(db, owner="restarted").recover() == []  # not answered again


async def session_rows(db: Database, channel: str, chat: str, msg: str, roles: list[str]) -> None:
    await db.execute(
        "INSERT INTO sessions (tenant, channel, chat, started_at, updated_at)"
        " VALUES ('alice', ?, ?, 1, 1)",
        (channel, chat),
    )
    for n, role in enumerate(roles):
        await db.execute(
            "INSERT INTO session_messages (tenant, channel, chat, turn, role, content, msg_id, at)"
            " VALUES ('alice', ?, ?, 1, ?, ?, ?, 1)",
            (channel, chat, role, f"{role} {n}", msg),
        )


async def test_the_answer_a_session_stored_for_a_message(db: Database) -> None:
    box = telegram(db)
    await session_rows(db, "telegram", "111", "501", ["user", "assistant", "tool", "assistant"])
    await session_rows(db, "telegram", "-100:111", "502", ["user"])  # cut before its answer
    assert await box.stored_answer("111", "501") == "assistant 3"
    assert await box.stored_answer("111", "502") is None  # another message
    assert await box.stored_answer("-100:111", "502") is None  # no answer stored
    assert await box.stored_answer("222", "501") is None  # another chat
    assert await box.stored_answer("111", "") is None
    matrix = MatrixInbox(db, "@bot:hs", "p1", clock=lambda: NOW)
    assert await matrix.stored_answer("111", "501") is None  # another channel
    await session_rows(db, "matrix", "@alice:hs", "$ev1", ["user", "assistant"])
    assert await matrix.stored_answer("@alice:hs", "$ev1") == "assistant 1"
