"""WhatsApp's shared inbox (bridge/channels/whatsapp/inbox.py) on both backends.

A delivery's messages are stored in one transaction, the id seen and the
row `new`, numbered in the order they were stored; a redelivery (one
message or a whole delivery) adds nothing; a message kept round-trips
through its row; three connections storing at once (three instances, on
PostgreSQL really concurrent) get distinct numbers and lose nothing; the
person's messages are then taken in order by `ChatQueue`.
"""

from __future__ import annotations

import asyncio

from bridge.channels.common.chat_queue import ChatQueue
from bridge.channels.whatsapp.inbox import WhatsAppInbox, incoming_of
from bridge.channels.whatsapp.payload import Incoming, Media
from bridge.channels.whatsapp.store import WhatsAppStore, key
from bridge.storage.protocol import Database
from tests.storage.conftest import OpenDb

PNID = "106540352242922"
ALICE, BOB = "4915112345678", "4915187654321"


def text(n: int, sender: str = ALICE) -> Incoming:
    return Incoming(f"wamid.{sender}.{n}", sender, "A", 1_700_000_000 + n, "text", f"q{n}")


async def rows(db: Database) -> list[tuple[int, str, str, str]]:
    got = await db.fetch_all(
        "SELECT update_id, chat, msg, state FROM channel_inbox WHERE source = ? ORDER BY update_id",
        (f"whatsapp:{PNID}",),
    )
    return [(int(u), str(c), str(m), str(s)) for u, c, m, s in got]


async def test_a_delivery_is_stored_in_order_once_and_its_ids_seen(db: Database) -> None:
    inbox = WhatsAppInbox(db, PNID, "a")
    assert await inbox.store([text(1), text(2, BOB), text(3)]) == 3
    assert await inbox.store([text(3), text(4)]) == 1  # 3 is a redelivery
    assert await inbox.store([text(1), text(2, BOB)]) == 0
    assert await rows(db) == [
        (1, ALICE, key(text(1).wamid), "new"),
        (2, BOB, key(text(2, BOB).wamid), "new"),
        (3, ALICE, key(text(3).wamid), "new"),
        (4, ALICE, key(text(4).wamid), "new"),
    ]
    # the single-instance path sees them as seen too (one table of ids)
    assert await WhatsAppStore(db).first_time(text(4).wamid, 0) is False
    queue = ChatQueue(db, inbox.source, channel="whatsapp")
    assert await queue.open_chats() == [ALICE, BOB]
    first = await queue.claim(ALICE, "a")
    assert first is not None and incoming_of(first.payload) == text(1)
    await inbox.done(first.update_id)
    nxt = await queue.claim(ALICE, "a")
    assert nxt is not None and incoming_of(nxt.payload) == text(3)


async def test_a_message_with_media_round_trips_through_its_row(db: Database) -> None:
    inbox = WhatsAppInbox(db, PNID, "a")
    media = Media("777", "image/jpeg", "ab" * 32, "", False)
    msg = Incoming("wamid.m", ALICE, "Ä", 1_700_000_000, "image", "a caption ✓", media, "x")
    assert await inbox.store([msg]) == 1
    taken = await ChatQueue(db, inbox.source, channel="whatsapp").claim(ALICE, "a")
    assert taken is not None and incoming_of(taken.payload) == msg


async def test_three_instances_storing_at_once_get_distinct_numbers(open_db: OpenDb) -> None:
    """Each instance stores one delivery at a time (the channel's `_taking`), as here;
    the instances race each other for the source's next number."""
    per = 40
    dbs = [await open_db() for _ in range(3)]
    inboxes = [WhatsAppInbox(d, PNID, f"i{n}") for n, d in enumerate(dbs)]

    async def one(inbox: WhatsAppInbox, msgs: list[Incoming]) -> int:
        return sum([await inbox.store([m]) for m in msgs])

    alice, bob = [text(n) for n in range(per)], [text(n, BOB) for n in range(per)]
    stored = await asyncio.gather(
        one(inboxes[0], alice),
        one(inboxes[1], bob),
        one(inboxes[2], alice),  # redelivered
    )
    assert sum(stored) == 2 * per
    got = await rows(dbs[0])
    assert [u for u, *_ in got] == list(range(1, 2 * per + 1))
    assert [m for _, c, m, _ in got if c == ALICE] == [key(t.wamid) for t in alice]
    assert [m for _, c, m, _ in got if c == BOB] == [key(t.wamid) for t in bob]
