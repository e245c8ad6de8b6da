"""WhatsApp on a PostgreSQL home (instances may share the number), in process.

With `[database] url` the row stores each delivery's messages first and the
holder of the person's lease answers them (bridge/channels/whatsapp/inbox.py,
bridge/channels/common/shared.py): answered once and marked done, a
redelivery not answered again, an unreadable row dropped, and a message
taken too often given up with one line to the person through the outbox;
an answer settles (its done mark) once its text is out, before its files.
The several-instance run with a SIGKILL is tests/cluster/test_shared_whatsapp.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import asyncpg

from bridge.channels.common.shared import GIVEN_UP, MAX_TRIES
from bridge.channels.whatsapp.client import GraphClient
from bridge.channels.whatsapp.inbox import WhatsAppInbox
from bridge.channels.whatsapp.reply import WhatsAppReply
from bridge.channels.whatsapp.send import Outgoing
from bridge.channels.whatsapp.store import key
from bridge.types.messages import Final, Inbound, OutFile
from tests.conftest import ScriptedBackend
from tests.fakes import whatsapp_payloads as hooks
from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.storage.conftest import pg_server, pg_url
from tests.waits import HANG_S
from tests.whatsapp.conftest import ALICE, running, wa_settings
from tests.whatsapp.conftest import TOKEN as WA_TOKEN

__all__ = ["pg_server", "pg_url"]  # the session's PostgreSQL, a database per test


async def states(url: str) -> list[tuple[str, int]]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT state, tries FROM channel_inbox WHERE source LIKE 'whatsapp:%'"
            " ORDER BY update_id"
        )
    finally:
        await conn.close()
    return [(r["state"], r["tries"]) for r in rows]


async def until_states(url: str, want: list[tuple[str, int]]) -> None:
    async with asyncio.timeout(HANG_S):
        while await states(url) != want:
            await asyncio.sleep(0.02)


async def test_stored_first_answered_once_by_the_lease_holder(
    home: Path, fake: FakeWhatsApp, pg_url: str
) -> None:
    backend = ScriptedBackend("one", "two")
    settings = wa_settings(home, fake, database={"url": pg_url})
    async with running(settings, fake, backend) as r:
        assert r.channel.shared is not None
        _, body = hooks.text(fake.phone_number_id, ALICE, "first")
        assert await fake.deliver(body) == 200
        assert await fake.deliver(body) == 200  # Meta sends it again: stored once
        await fake.text(ALICE, "second")
        await fake.wait_to(ALICE, 2)
        await until_states(pg_url, [("done", 1), ("done", 1)])
    assert fake.texts(ALICE) == ["one", "two"]
    assert r.channel.duplicates == 1 and len(backend.requests) == 2


async def test_unreadable_dropped_and_too_often_taken_given_up(
    home: Path, fake: FakeWhatsApp, pg_url: str
) -> None:
    backend = ScriptedBackend()
    settings = wa_settings(home, fake, database={"url": pg_url})
    async with running(settings, fake, backend) as r:
        inbox, shared = r.channel.inbox, r.channel.shared
        assert isinstance(inbox, WhatsAppInbox) and shared is not None
        _, body = hooks.text(fake.phone_number_id, ALICE, "poison")
        wamid = body["entry"][0]["changes"][0]["value"]["messages"][0]["id"]
        conn = await asyncpg.connect(pg_url)
        try:
            async with conn.transaction():  # as if two instances died on it, and a bad row
                await conn.execute(
                    "INSERT INTO channel_inbox (source, update_id, chat, msg, payload, state,"
                    " owner, received_ms, sent_ms, tries) VALUES"
                    " ($1, 1, $2, 'x', '{\"nonsense\": 1}', 'new', '', 0, 0, 0),"
                    " ($1, 2, $2, $3, $4, 'working', 'dead', 0, 0, $5)",
                    inbox.source,
                    ALICE,
                    key(wamid),
                    json.dumps(
                        {
                            "wamid": wamid,
                            "sender": ALICE,
                            "name": "A",
                            "timestamp": 1,
                            "kind": "text",
                            "text": "poison",
                            "media": None,
                            "replies_to": "",
                        }
                    ),
                    MAX_TRIES,
                )
            await shared.wake()
            await until_states(pg_url, [("dropped", 1), ("dropped", MAX_TRIES + 1)])
            told = await conn.fetch("SELECT chat, text FROM outbox WHERE channel = 'whatsapp'")
        finally:
            await conn.close()
    assert [(t["chat"], t["text"]) for t in told] == [(ALICE, GIVEN_UP)]
    assert backend.requests == []


async def test_an_answer_is_settled_once_its_text_is_out_before_its_files(
    tmp_path: Path, fake: FakeWhatsApp
) -> None:
    """The done mark of a shared message is written at this moment: a crash while the
    files follow does not answer the message again."""
    doc = tmp_path / "report.pdf"
    doc.write_bytes(b"%PDF-1.4 roost")
    client = GraphClient(fake.base_url, WA_TOKEN, fake.phone_number_id)
    seen: list[tuple[int, int]] = []

    async def settled() -> None:
        seen.append((len(fake.texts(ALICE)), len(fake.uploads)))

    inbound = Inbound("whatsapp", ALICE, ALICE, "hi", "k1")
    reply = WhatsAppReply(Outgoing(client), inbound, "wamid.x", settled=settled)
    try:
        await reply.send(
            Final("here it is", files=(OutFile(doc, "report.pdf", "application/pdf"),))
        )
    finally:
        await client.aclose()
    assert seen == [(1, 0)] and len(fake.uploads) == 1
