"""The Matrix channel's durable inbox (`bridge.channels.matrix.inbox`) on both backends.

A sync batch's messages to answer and its token commit in one transaction,
numbered in order and owned by the process that took them; what a process
left open (killed, or stopped before it answered) is handed to the next one,
oldest first, once, except what already waits in the outbox; a handled
message keeps no text; a message with a file round-trips through its row; a
failed write stores neither the messages nor the token; a lone surrogate is kept.
"""

from __future__ import annotations

import json

import pytest

from bridge.channels.matrix.events import Media, Message
from bridge.channels.matrix.inbox import MatrixInbox, message_of, payload_of
from bridge.channels.matrix.store import MatrixStore
from bridge.schedule.outbox import OutboxStore
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database
from tests.masking import m

BOT, ALICE, BOB = "@bot:hs", "@alice:hs", "@bob:hs"


def said(n: int, sender: str = ALICE) -> tuple[str, Message]:
    return sender, Message(f"!room{sender}", sender, f"$event{n}", "m.text", f"q{n}")


async def rows(db: Database) -> list[tuple[int, str, str, str, str, bool]]:
    got = await db.fetch_all(
        "SELECT update_id, chat, msg, state, owner, payload FROM channel_inbox"
        " WHERE source = ? ORDER BY update_id",
        (f"matrix:{BOT}",),
    )
    return [(int(u), str(c), str(g), str(s), str(o), bool(p)) for u, c, g, s, o, p in got]


async def test_a_batch_and_its_token_are_stored_together_in_order(db: Database) -> None:
    inbox = MatrixInbox(db, BOT, "a")
    assert await inbox.take([said(1), said(2, BOB), said(3)], "s1") == [1, 2, 3]
    assert await inbox.take([], "s2") == []  # a batch with nothing to answer moves the token
    assert await inbox.take([said(4)], "s3") == [4]
    assert await MatrixStore(db, BOT).next_batch() == "s3"
    assert await rows(db) == [
        (1, ALICE, "$event1", "working", "a", True),
        (2, BOB, "$event2", "working", "a", True),
        (3, ALICE, "$event3", "working", "a", True),
        (4, ALICE, "$event4", "working", "a", True),
    ]
    await inbox.done(2)
    assert (await rows(db))[1] == (2, BOB, "$event2", "done", "a", False), "no text kept"
    assert await inbox.open_count() == 3


async def test_what_a_process_left_is_answered_by_the_next_once_in_order(db: Database) -> None:
    killed = MatrixInbox(db, BOT, "killed")
    await killed.take([said(1), said(2, BOB), said(3)], "s1")
    await killed.done(1)
    restarted = MatrixInbox(db, BOT, "restarted")
    kept = await restarted.recover()
    assert [(k.update_id, k.message) for k in kept] == [(2, said(2, BOB)[1]), (3, said(3)[1])]
    assert await restarted.recover() == [], "its own now: not handed out twice"
    assert await MatrixInbox(db, "@other:hs", "third").recover() == [], "one account's rows"


async def test_an_answer_waiting_in_the_outbox_counts_as_answered(db: Database) -> None:
    killed = MatrixInbox(db, BOT, "killed")
    await killed.take([said(1), said(2)], "s1")
    await OutboxStore(db).enqueue("alice", "matrix", ALICE, m("a"), "reply:$event1", now_ms=1)
    kept = await MatrixInbox(db, BOT, "restarted").recover()
    assert [k.update_id for k in kept] == [2]
    assert [(u, s, o) for u, _, _, s, o, _ in await rows(db)] == [
        (1, "done", "killed"),
        (2, "working", "restarted"),
    ]


async def test_a_row_this_version_cannot_read_is_handed_over_as_unreadable(
    db: Database,
) -> None:
    await MatrixInbox(db, BOT, "killed").take([said(1)], "s1")
    await db.execute("UPDATE channel_inbox SET payload = '{\"nope\": 1}' WHERE update_id = 1")
    (kept,) = await MatrixInbox(db, BOT, "restarted").recover()
    assert kept.update_id == 1 and kept.message is None


async def test_a_failed_write_stores_neither_the_messages_nor_the_token(db: Database) -> None:
    inbox = MatrixInbox(db, BOT, "a")
    await inbox.take([said(1)], "s1")
    await db.execute("DROP TABLE matrix_sync")  # the token's write fails after the rows'
    with pytest.raises(StorageError):
        await inbox.take([said(2), said(3)], "s2")
    assert [u for u, *_ in await rows(db)] == [1]


def test_a_message_with_a_file_round_trips_through_its_row() -> None:
    media = Media("mxc://hs/abc", "audio/ogg", 1234, "voice.ogg", voice=True)
    msg = Message("!r:hs", ALICE, "$e", "m.audio", None, media, mentions_me=True)
    assert message_of(json.loads(payload_of(msg))) == msg


async def test_a_message_with_a_lone_surrogate_is_kept_and_read_back(db: Database) -> None:
    """A `\\ud800` escape in the event: no database stores the surrogate (SQLite raised
    UnicodeEncodeError out of the sync loop, which ended; PostgreSQL refused the batch)."""
    msg = Message("!r:hs", ALICE, "$e", "m.text", "hi \ud800 there")
    assert await MatrixInbox(db, BOT, "killed").take([(ALICE, msg)], "s1") == [1]
    (kept,) = await MatrixInbox(db, BOT, "restarted").recover()
    assert kept.message == msg


async def test_each_run_that_begins_a_message_counts_in_its_tries(db: Database) -> None:
    """Taking a row over counts nothing; beginning it does (the take was the first)."""
    await MatrixInbox(db, BOT, "first").take([said(1), said(2)], "s1")
    counted = []
    for n in range(3):
        run = MatrixInbox(db, BOT, f"run{n}")
        kept = await run.recover()
        counted.append([k.tries for k in kept])
        await run.started(kept[0].update_id)  # the first began; the second waited behind it
    assert counted == [[1, 1], [2, 1], [3, 1]]
