"""The durable inbox's store on a real SQLite database (the daemon's migrations).

Updates shaped as the Bot API sends them (a private message, a group
message, a button press, an edited message); the store keeps each once per
bot, hands each to one claimant, keeps no text once answered, and gives a
later process what an earlier one left, oldest first, except what already
waits in the outbox.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bridge.channels.telegram.inbox import KEEP_MS, UpdateInbox, describe
from bridge.core.db import connect
from bridge.schedule.outbox import OutboxStore
from tests.masking import m
from tests.schedule.database import database_of

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


@pytest.fixture
def conn(tmp_path: Path) -> Any:
    return connect(tmp_path / "roost.db")


def inbox(conn: Any, owner: str = "p1", source: str = "telegram:1") -> UpdateInbox:
    return UpdateInbox(conn, source, owner, clock=lambda: NOW)


def test_what_an_update_is_for() -> None:
    assert describe(message(1, 111, "hi")) == ("111", "501", (int(NOW) - 60) * 1000)
    assert describe(message(2, 111, "hi", chat=-100))[:2] == ("-100:111", "502")
    assert describe(press(3, 111, "/yes k3f9")) == ("111", "cb4711", None)
    assert describe({"update_id": 4, "edited_message": message(4, 1, "x")["message"]}) == (
        "",
        "",
        None,
    )


def test_an_update_is_stored_once_per_bot(conn: Any) -> None:
    first, other_bot = inbox(conn), inbox(conn, source="telegram:2")
    assert first.store([message(1, 111, "hi"), message(2, 111, "again")]) == 2
    assert first.store([message(1, 111, "hi")]) == 0  # redelivered: nothing new
    assert other_bot.store([message(1, 222, "another bot's update 1")]) == 1
    assert first.open_count() == 2 and other_bot.open_count() == 1


def test_one_claimant_and_no_text_kept_once_answered(conn: Any) -> None:
    box = inbox(conn)
    box.store([message(1, 111, "my secret plan")])
    assert box.claim(1) and not box.claim(1)
    box.done(1)
    assert not box.claim(1)
    (payload,) = conn.execute("SELECT payload FROM channel_inbox").fetchone()
    assert payload == "" and box.open_count() == 0


def test_the_next_process_takes_over_what_was_left_oldest_first(conn: Any) -> None:
    gone = inbox(conn, owner="killed")
    gone.store([message(n, 111 + n % 2, f"q{n}") for n in (3, 1, 2, 4)])
    assert gone.claim(1) and gone.claim(2)
    gone.done(1)  # answered before the crash
    later = inbox(conn, owner="restarted")
    taken = later.recover()
    assert [(s.update_id, s.chat, s.payload["message"]["text"]) for s in taken] == [
        (2, "111", "q2"),
        (3, "112", "q3"),
        (4, "111", "q4"),
    ]
    assert later.recover() == []  # now its own: not handed out twice
    assert not later.claim(3)  # a redelivery of a recovered update is not answered again


async def test_an_answer_waiting_in_the_outbox_counts_as_answered(
    conn: Any, tmp_path: Path
) -> None:
    gone = inbox(conn, owner="killed")
    gone.store([message(1, 111, "q1"), message(2, 111, "q2")])
    gone.claim(1)
    gone.claim(2)
    async with database_of(tmp_path / "roost.db") as db:  # the outbox's way into roost.db
        await OutboxStore(db).enqueue("alice", "telegram", "111", m("a"), "reply:501", now_ms=1)
    taken = inbox(conn, owner="restarted").recover()
    assert [s.update_id for s in taken] == [2]
    states = dict(conn.execute("SELECT update_id, state FROM channel_inbox").fetchall())
    assert states == {1: "done", 2: "working"}


def test_answered_updates_are_forgotten_after_a_while(conn: Any) -> None:
    now = [NOW]
    box = UpdateInbox(conn, "telegram:1", "p", clock=lambda: now[0])
    box.store([message(1, 111, "a"), message(2, 111, "b")])
    box.claim(1)
    box.done(1)
    box.claim(2)
    box.done(2, dropped=True)
    assert box.prune() == 0
    now[0] += KEEP_MS / 1000 + 1
    assert box.prune() == 2
    assert conn.execute("SELECT COUNT(*) FROM channel_inbox").fetchone() == (0,)


def test_the_payload_is_the_update_as_received(conn: Any) -> None:
    box = inbox(conn)
    update = message(7, 111, "grüße 👋")
    box.store([update])
    (payload,) = conn.execute("SELECT payload FROM channel_inbox").fetchone()
    assert json.loads(payload) == update


def test_claim_and_done_are_one_statement_each_and_join_an_open_transaction(
    tmp_path: Path,
) -> None:
    conn = connect(tmp_path / "roost.db")
    inbox = UpdateInbox(conn, "telegram:1", "me", clock=lambda: NOW)
    assert inbox.store([message(1, 7, "hi"), message(2, 7, "again")]) == 2
    said: list[str] = []
    conn.set_trace_callback(said.append)
    assert inbox.claim(1)
    inbox.done(1)
    assert [s.split()[0] for s in said] == ["UPDATE", "UPDATE"]  # no BEGIN/COMMIT of their own
    conn.set_trace_callback(None)
    conn.execute("BEGIN IMMEDIATE")
    assert inbox.claim(2)
    conn.execute("ROLLBACK")  # the claim was part of the outer transaction
    assert inbox.claim(2) and not inbox.claim(2)
    conn.close()
