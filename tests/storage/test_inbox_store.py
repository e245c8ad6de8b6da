"""The Telegram durable inbox's store (`bridge.channels.telegram.inbox`) on both backends.

Updates shaped as the Bot API sends them (a private message, a group
message, a button press, an edited message); the store keeps each once per
bot (of two instances storing one update at once exactly one gets it), lets
the process that stored it answer it once, keeps no text once answered, and
gives a later process what an earlier one left, oldest first, except what
already waits in the outbox (a claim that skips rows another transaction
holds on PostgreSQL). Every write is one statement: a `getUpdates` answer is ONE INSERT, an
update's answer one UPDATE.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bridge.channels.common.inbox_marks import KEEP_MS
from bridge.channels.telegram.inbox import UpdateInbox, describe
from bridge.core.db import connect
from bridge.schedule.outbox import OutboxStore
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database
from tests.masking import m
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced

NOW = 1_800_000_000.0


def message(update_id: int, user: int, text: str, chat: int | None = None) -> dict[str, Any]:
    chat = user if chat is None else chat
    kind = "private" if chat == user else "supergroup"
    return {
        "update_id": update_id,
        "message": {
            "message_id": 500 + update_id,
            "date": int(NOW) - 60,
            "chat": {"id": chat, "type": kind},
            "from": {"id": user, "is_bot": False, "first_name": "A"},
            "text": text,
        },
    }


def press(update_id: int, user: int, data: str) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "callback_query": {
            "id": "4711",
            "from": {"id": user, "is_bot": False, "first_name": "A"},
            "chat_instance": "ci",
            "data": data,
            "message": {
                "message_id": 9,
                "date": int(NOW) - 3600,
                "chat": {"id": user, "type": "private"},
                "from": {"id": 42, "is_bot": True, "first_name": "roost"},
                "text": "earlier",
            },
        },
    }


def inbox(db: Database, owner: str = "p1", source: str = "telegram:1") -> UpdateInbox:
    return UpdateInbox(db, source, owner, clock=lambda: NOW)


async def rows(db: Database) -> list[tuple[int, str, str, str]]:
    """(update_id, state, owner, payload) of every stored update."""
    got = await db.fetch_all(
        "SELECT update_id, state, owner, payload FROM channel_inbox ORDER BY update_id"
    )
    return [(int(u), str(s), str(o), str(p)) for u, s, o, p in got]


def test_what_an_update_is_for() -> None:
    assert describe(message(1, 111, "hi")) == ("111", "501", (int(NOW) - 60) * 1000)
    assert describe(message(2, 111, "hi", chat=-100))[:2] == ("-100:111", "502")
    assert describe(press(3, 111, "/yes k3f9")) == ("111", "cb4711", None)
    assert describe({"update_id": 4, "edited_message": message(4, 1, "x")["message"]}) == (
        "",
        "",
        None,
    )


async def test_an_update_is_stored_once_per_bot(db: Database) -> None:
    first, other_bot = inbox(db), inbox(db, source="telegram:2")
    assert await first.store([message(1, 111, "hi"), message(2, 111, "again")]) == 2
    assert await first.store([message(1, 111, "hi")]) == 0  # redelivered: nothing new
    assert await other_bot.store([message(1, 222, "another bot's update 1")]) == 1
    assert await first.open_count() == 2 and await other_bot.open_count() == 1
    assert [(u, s, o) for u, s, o, _ in await rows(db)] == [
        (1, "working", "p1"),
        (1, "working", "p1"),
        (2, "working", "p1"),
    ], "stored already taken by the process that stored them"


async def test_odd_updates_in_a_batch(db: Database) -> None:
    """No id, a bool id, the same update twice in one answer, an empty answer."""
    box = inbox(db)
    assert await box.store([]) == 0
    odd = [{"message": {}}, {"update_id": "7"}, {"update_id": True}]
    assert await box.store([*odd, message(5, 111, "a"), message(5, 111, "a")]) == 1
    assert [u for u, *_ in await rows(db)] == [5]
    assert box.take(5) and not box.take(5)


async def test_the_storer_answers_once_and_no_text_is_kept_once_answered(db: Database) -> None:
    box = inbox(db)
    await box.store([message(1, 111, "my secret plan")])
    assert box.take(1) and not box.take(1)
    assert await box.store([message(1, 111, "my secret plan")]) == 0  # a redelivery
    assert not box.take(1), "a redelivery is not answered again"
    await box.done(1)
    ((_, state, _, payload),) = await rows(db)
    assert (state, payload) == ("done", "") and await box.open_count() == 0


async def test_the_next_process_takes_over_what_was_left_oldest_first(db: Database) -> None:
    gone = inbox(db, owner="killed")
    await gone.store([message(n, 111 + n % 2, f"q{n}") for n in (3, 1, 2, 4)])
    assert gone.take(1) and gone.take(2)
    await gone.done(1)  # answered before the crash
    later = inbox(db, owner="restarted")
    taken = await later.recover()
    assert [(s.update_id, s.chat, s.payload["message"]["text"]) for s in taken] == [
        (2, "111", "q2"),
        (3, "112", "q3"),
        (4, "111", "q4"),
    ]
    assert taken[0].msg == "502" and taken[0].sent_ms == (int(NOW) - 60) * 1000
    assert await later.recover() == []  # now its own: not handed out twice
    assert await later.store([message(3, 112, "q3")]) == 0
    assert not later.take(3), "a redelivery of a recovered update is not answered again"


async def test_an_answer_waiting_in_the_outbox_counts_as_answered(db: Database) -> None:
    gone = inbox(db, owner="killed")
    await gone.store([message(1, 111, "q1"), message(2, 111, "q2")])
    await OutboxStore(db).enqueue("alice", "telegram", "111", m("a"), "reply:501", now_ms=1)
    taken = await inbox(db, owner="restarted").recover()
    assert [s.update_id for s in taken] == [2]
    assert [(u, s, o) for u, s, o, _ in await rows(db)] == [
        (1, "done", "killed"),
        (2, "working", "restarted"),
    ]


async def test_answered_updates_are_forgotten_after_a_while(db: Database) -> None:
    now = [NOW]
    box = UpdateInbox(db, "telegram:1", "p", clock=lambda: now[0])
    other = UpdateInbox(db, "telegram:2", "p", clock=lambda: now[0])
    await box.store([message(1, 111, "a"), message(2, 111, "b"), message(3, 111, "c")])
    await other.store([message(1, 111, "a")])
    await box.done(1)
    await box.done(2, dropped=True)
    await other.done(1)
    assert await box.prune() == 0
    now[0] += KEEP_MS / 1000 + 1
    assert await box.prune() == 2
    assert [u for u, *_ in await rows(db)] == [1, 3], "open ones and other bots' stay"


async def test_the_payload_is_the_update_as_received(db: Database) -> None:
    box = inbox(db)
    update = message(7, 111, "grüße 👋 \u2028 \\ '")
    await box.store([update])
    ((_, _, _, payload),) = await rows(db)
    assert json.loads(payload) == update
    (stored,) = await inbox(db, owner="next").recover()
    assert stored.payload == update


async def test_marks_asked_for_at_once_are_committed_together(db: Database) -> None:
    """Thirty chats' answers settle at once: every caller returns once its own row is
    committed, the dropped one too."""
    box = inbox(db)
    await box.store([message(n, 100 + n, f"q{n}") for n in range(1, 31)])
    await asyncio.gather(*(box.done(n, dropped=n == 7) for n in range(1, 31)))
    states = {u: s for u, s, _, _ in await rows(db)}
    assert states == {n: "dropped" if n == 7 else "done" for n in range(1, 31)}
    assert await box.open_count() == 0


async def test_a_mark_that_cannot_be_written_is_told_to_each_caller(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = inbox(db)
    await box.store([message(n, 111, f"q{n}") for n in (1, 2, 3)])
    real = db.execute

    async def away(sql: str, params: Any = None) -> int:
        raise StorageError("the database went away")

    monkeypatch.setattr(db, "execute", away)
    got = await asyncio.gather(box.done(1), box.done(2), return_exceptions=True)
    assert [type(g) for g in got] == [StorageError, StorageError]
    monkeypatch.setattr(db, "execute", real)
    await box.done(3)  # the next mark is written, the two that failed with it
    assert [s for _, s, _, _ in await rows(db)] == ["done", "done", "done"]
    assert box.unwritten == 0


async def test_two_instances_storing_one_update_at_once_store_it_once(open_db: OpenDb) -> None:
    """Two connections (two pools on PostgreSQL) receive the same updates at the same
    moment, one by one and in overlapping batches: each update is stored by exactly one,
    and exactly one of them answers it."""
    one, two = inbox(await open_db(), owner="a"), inbox(await open_db(), owner="b")
    for n in range(1, 21):
        got = await asyncio.gather(
            one.store([message(n, 111, f"q{n}")]), two.store([message(n, 111, f"q{n}")])
        )
        assert sorted(got) == [0, 1], (n, got)
    batches = await asyncio.gather(
        one.store([message(n, 111, f"q{n}") for n in range(21, 61)]),
        two.store([message(n, 111, f"q{n}") for n in range(41, 81)]),
    )
    assert sum(batches) == 60
    for n in range(1, 81):
        assert one.take(n) + two.take(n) == 1, n
    owners = await one.db.fetch_all("SELECT owner, count(*) FROM channel_inbox GROUP BY owner")
    assert sum(int(c) for _, c in owners) == 80


async def test_a_recovery_skips_an_update_another_transaction_holds(
    backend: str, open_db: OpenDb
) -> None:
    """PostgreSQL: while another instance holds one left update's row, a recovery takes the
    others without waiting for it (SKIP LOCKED), and never the held one."""
    if backend != "postgresql":
        pytest.skip("SQLite has one writer: the recovery waits for the open transaction")
    gone = inbox(await open_db(), owner="killed")
    await gone.store([message(1, 111, "held"), message(2, 111, "free")])
    later = inbox(await open_db(), owner="later")
    async with gone.db.transaction():
        await gone.db.fetch_all(
            "SELECT update_id FROM channel_inbox WHERE update_id = 1 FOR UPDATE"
        )
        taken = await asyncio.wait_for(later.recover(), timeout=60)  # a hang, not a speed
        assert [s.update_id for s in taken] == [2]


async def test_statements_per_update_and_no_transaction(backend: str, tmp_path: Path) -> None:
    """SQLite's statements: a getUpdates answer of ten updates is ONE INSERT, taking one
    is none, answering it one UPDATE, nine answered at once at most two; no BEGIN from
    any write (the rule while roost.db has two ways in), recovery included."""
    if backend != "sqlite":
        pytest.skip("the statements SQLite ran")
    database, statements = await traced(tmp_path / "roost.db")
    try:
        box = UpdateInbox(database, "telegram:1", "me", clock=lambda: NOW)
        statements.clear()
        assert await box.store([message(n, 7, f"q{n}") for n in range(1, 11)]) == 10
        assert [s.split()[0] for s in statements] == ["INSERT"]
        statements.clear()
        assert box.take(1)
        await box.done(1)
        assert [s.split()[0] for s in statements] == ["UPDATE"]
        statements.clear()
        await asyncio.gather(*(box.done(n) for n in range(2, 11)))  # nine chats at once
        assert 1 <= len(statements) <= 2, statements  # the first alone, the rest together
        await inbox(database, owner="next").recover()
        await box.prune()
        await box.open_count()
    finally:
        await database.aclose()
    assert not [s for s in statements if s.lstrip().upper().startswith("BEGIN")]


async def test_the_daemons_connection_reads_what_the_inbox_stored(
    backend: str, tmp_path: Path
) -> None:
    """SQLite, during the move: `bridge.core.db`'s connection (the doctor, export, the
    tests' readers) sees the inbox's rows on one WAL file."""
    if backend != "sqlite":
        pytest.skip("the two-connection transition is SQLite's")
    old = connect(tmp_path / "roost.db")
    database, _ = await traced(tmp_path / "roost.db")
    try:
        await inbox(database).store([message(1, 7, "hi")])
        row = old.execute("SELECT update_id, state FROM channel_inbox").fetchone()
        assert row == (1, "working")
    finally:
        await database.aclose()
        old.close()
