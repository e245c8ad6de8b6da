"""The WhatsApp channel's store (`bridge.channels.whatsapp.store`) on both backends.

A message id is taken once (of two instances taking one at once exactly one
gets it), ids are pruned after their week; the 24-hour window keeps the
latest time a person wrote; a sent message's status only moves forward
(sent < delivered < read; failed always wins), also when statuses race
from two connections; `recent` lists a chat's outbox messages, newest
first. Every write one statement.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bridge.channels.whatsapp.store import DAY_MS, Sent, WhatsAppStore, key
from bridge.storage.protocol import Database
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced

T0 = 1_800_000_000_000
ALICE = "4915112345678"


async def count(db: Database, table: str) -> int:
    return int(await db.fetch_value(f"SELECT count(*) FROM {table}"))


async def test_a_message_id_is_taken_once_and_kept_a_week(db: Database) -> None:
    store = WhatsAppStore(db, prune_every=1_000_000)
    assert await store.first_time("wamid.A", T0)
    assert not await store.first_time("wamid.A", T0 + 1), "a duplicate"
    assert await store.first_time("wamid.B", T0 + 1)
    stored = [str(k) for (k,) in await db.fetch_all("SELECT msg_key FROM whatsapp_seen")]
    assert sorted(stored) == sorted([key("wamid.A"), key("wamid.B")])
    assert not any(ALICE in k or "wamid" in k for k in stored), "only the hash"
    await store.prune(T0 + 7 * DAY_MS)
    assert await count(db, "whatsapp_seen") == 2
    await store.prune(T0 + 7 * DAY_MS + 1)
    assert await count(db, "whatsapp_seen") == 1
    await store.prune(T0 + 7 * DAY_MS + 2)
    assert await count(db, "whatsapp_seen") == 0
    assert await store.first_time("wamid.A", T0 + 8 * DAY_MS), "forgotten after its week"


async def test_every_thousandth_id_prunes(db: Database) -> None:
    store = WhatsAppStore(db, keep_seen_ms=10, prune_every=5)
    for n in range(4):
        assert await store.first_time(f"old{n}", T0)
    assert await count(db, "whatsapp_seen") == 4
    assert await store.first_time("new", T0 + 100)  # the fifth: the old ones go
    assert await count(db, "whatsapp_seen") == 1


async def test_the_window_keeps_the_latest_time_a_person_wrote(db: Database) -> None:
    store = WhatsAppStore(db)
    assert await store.last_in_ms(ALICE) is None
    await store.wrote("alice", ALICE, T0)
    await store.wrote("alice", ALICE, T0 - 5000)  # a late, older message: no step back
    assert await store.last_in_ms(ALICE) == T0
    await store.wrote("bob", ALICE, T0 + 5000)  # the number now belongs to bob
    assert await store.last_in_ms(ALICE) == T0 + 5000
    assert await db.fetch_all("SELECT tenant, wa_id FROM whatsapp_window") == [("bob", ALICE)]


async def test_a_status_only_moves_forward_and_failed_wins(db: Database) -> None:
    store = WhatsAppStore(db)
    assert await store.status("wamid.unknown", "read", None, T0) is None, "not ours"
    await store.sent("wamid.1", "alice", ALICE, "text", T0, entry=7)
    await store.sent("wamid.1", "alice", ALICE, "text", T0 + 1, entry=8)  # kept as it was
    steps = [("delivered", T0 + 1), ("sent", T0 + 2), ("read", T0 + 3), ("delivered", T0 + 4)]
    seen = [await store.status("wamid.1", status, None, now) for status, now in steps]
    assert [(s.status, s.updated_ms) for s in seen if s] == [
        ("delivered", T0 + 1),
        ("delivered", T0 + 1),
        ("read", T0 + 3),
        ("read", T0 + 3),
    ]
    odd = await store.status("wamid.1", "deleted", None, T0 + 5)  # a status roost does not know
    assert odd is not None and odd.status == "read"
    failed = await store.status("wamid.1", "failed", 131047, T0 + 6)
    assert failed == Sent(key("wamid.1"), "alice", ALICE, 7, "text", "failed", 131047, T0, T0 + 6)
    later = await store.status("wamid.1", "read", 5, T0 + 7)
    assert later is not None and (later.status, later.error) == ("failed", 131047)


async def test_statuses_racing_from_two_connections_end_at_the_highest(
    open_db: OpenDb,
) -> None:
    """Meta's callbacks may reach two instances at once: each status is one conditional
    UPDATE, so whichever lands last, the row ends at the highest rank."""
    one, two = WhatsAppStore(await open_db()), WhatsAppStore(await open_db())
    for n in range(20):
        wamid = f"wamid.{n}"
        await one.sent(wamid, "alice", ALICE, "text", T0, entry=n)
        await asyncio.gather(
            one.status(wamid, "sent", None, T0 + 1),
            two.status(wamid, "read", None, T0 + 1),
            one.status(wamid, "delivered", None, T0 + 1),
        )
        row = await two.status(wamid, "sent", None, T0 + 2)
        assert row is not None and row.status == "read", (n, row)


async def test_two_instances_taking_one_message_at_once_take_it_once(open_db: OpenDb) -> None:
    one, two = WhatsAppStore(await open_db()), WhatsAppStore(await open_db())
    for n in range(30):
        got = await asyncio.gather(
            one.first_time(f"wamid.{n}", T0), two.first_time(f"wamid.{n}", T0)
        )
        assert sorted(got) == [False, True], (n, got)


async def test_recent_lists_a_chats_outbox_messages_newest_first(db: Database) -> None:
    store = WhatsAppStore(db)
    await store.sent("w0", "alice", ALICE, "reply", T0)  # an answer: not an outbox entry
    for n in range(1, 8):
        await store.sent(f"w{n}", "alice", ALICE, "text", T0 + n, entry=n)
    await store.sent("w9", "bob", ALICE, "text", T0 + 9, entry=9)  # another tenant's
    recent = await store.recent("alice", ALICE)
    assert [s.entry for s in recent] == [7, 6, 5, 4, 3]
    assert [s.entry for s in await store.recent("alice", ALICE, limit=10)] == list(range(7, 0, -1))
    await store.prune(T0 + 30 * DAY_MS + 4)  # sent rows go after 30 days
    assert [s.entry for s in await store.recent("alice", ALICE, limit=10)] == [7, 6, 5, 4]


async def test_no_write_opens_a_transaction(backend: str, tmp_path: Path) -> None:
    """SQLite: every write is one statement, no BEGIN (the rule while roost.db has two
    ways in); a status is one UPDATE (no read before it)."""
    if backend != "sqlite":
        pytest.skip("the statements SQLite ran")
    database, statements = await traced(tmp_path / "roost.db")
    try:
        store = WhatsAppStore(database, prune_every=2)
        statements.clear()
        await store.first_time("a", T0)
        await store.first_time("b", T0)
        await store.wrote("alice", ALICE, T0)
        await store.sent("a", "alice", ALICE, "text", T0, entry=1)
        statements.clear()
        await store.status("a", "read", None, T0)
        assert [s.split()[0] for s in statements] == ["UPDATE"]
        await store.status("a", "sent", None, T0)
    finally:
        await database.aclose()
    assert not [s for s in statements if s.lstrip().upper().startswith("BEGIN")]
