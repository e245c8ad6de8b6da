"""Deliveries that are signed by Meta but odd: every good message in them is still answered.

Through the real row and the fake Cloud API: one item that does not fit (a
message without a phone number, as Meta's usernames may send; a status of
the wrong shape) is counted and left out, logged once by kind without
content, and the other messages of the delivery are answered; a file name
of any length is taken (cut); lone surrogates anywhere in a delivery
(text, profile name, file name) arrive as U+FFFD, so the conversation is
stored, also in the PostgreSQL inbox; a WhatsApp group's message is never
answered and never pairs; a message older than the seen window allows
(by its own timestamp) is not answered, so a captured body replayed after
its id was forgotten gets nothing; a delivery the database cannot take is
503 and its log line names the error's kind, never the values (a wamid
spells the sender's number).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.channels.whatsapp.payload import MAX_FILENAME, parse
from bridge.channels.whatsapp.store import DAY_MS
from bridge.storage.errors import StorageError
from tests.conftest import ScriptedBackend
from tests.fakes import whatsapp_payloads as hooks
from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.storage.conftest import pg_server, pg_url
from tests.whatsapp.conftest import ALICE, STRANGER, running, wa_settings

__all__ = ["pg_server", "pg_url"]  # the session's PostgreSQL, a database per test

BOB = "447700900123"
GROUP = "120363025246125486@g.us"


def messages_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    return body["entry"][0]["changes"][0]["value"]["messages"]  # type: ignore[no-any-return]


def with_items(pnid: str, good: dict[str, Any], *bad: dict[str, Any]) -> dict[str, Any]:
    """`good`'s delivery with the `bad` message items put before its own."""
    messages = messages_of(good)
    messages[:0] = list(bad)
    return good


def user_texts(backend: ScriptedBackend) -> list[str]:
    said = []
    for request in backend.requests:
        content = request.messages[-1].content
        said.append(content if isinstance(content, str) else str(content))
    return said


async def test_one_bad_item_does_not_lose_the_rest_of_the_delivery(
    home: Path, fake: FakeWhatsApp, caplog: pytest.LogCaptureFixture
) -> None:
    pnid = fake.phone_number_id
    no_phone = {  # a username without a phone number: only Meta's business-scoped user id
        "user_id": "US.13491208655302741918",
        "id": hooks.wamid(ALICE),
        "timestamp": str(int(time.time())),
        "type": "text",
        "text": {"body": "from a username"},
    }
    wrong_shape = {"from": ALICE, "id": "", "type": "text", "text": {"body": "no id"}}
    backend = ScriptedBackend("got it", "got the file")
    async with running(wa_settings(home, fake), fake, backend) as r:
        with caplog.at_level(logging.WARNING, logger="bridge.channels.whatsapp"):
            _, body = hooks.text(pnid, ALICE, "the good one")
            assert await fake.deliver(with_items(pnid, body, no_phone, wrong_shape)) == 200
            _, body = hooks.text(pnid, ALICE, "again")
            assert await fake.deliver(with_items(pnid, body, no_phone)) == 200
            await r.channel.idle()
            _, doc = hooks.document(pnid, ALICE, "77", "ab" * 32, "n" * 1025 + ".pdf", "x/y")
            # and a status of the wrong shape next to it
            doc["entry"][0]["changes"][0]["value"]["statuses"] = [{"id": "wamid.S"}]
            assert await fake.deliver(doc) == 200
            await r.channel.idle()
        ignored = dict(r.channel.ignored)
    assert fake.texts(ALICE)[:2] == ["got it", "got the file"]
    assert ignored == {"no_phone": 2, "invalid_message": 1, "invalid_status": 1}
    warnings = [rec.getMessage() for rec in caplog.records if rec.levelno == logging.WARNING]
    left_out = [w for w in warnings if "left out" in w]
    assert len(left_out) == 3, warnings  # once per kind
    assert not any(ALICE in w or "username" in w or "US." in w for w in warnings)


def test_a_file_name_of_any_length_is_cut_not_refused() -> None:
    _, body = hooks.document("1", ALICE, "7", "ef" * 32, "a" * 5000 + "\ud800.pdf", "x/y")
    delivery = parse(json.dumps(body).encode(), "1")
    assert delivery is not None
    (msg,) = delivery.messages
    assert msg.media is not None and msg.media.filename == "a" * MAX_FILENAME


async def test_lone_surrogates_arrive_as_replacement_characters(
    home: Path, fake: FakeWhatsApp
) -> None:
    backend = ScriptedBackend("one", "two")
    async with running(wa_settings(home, fake), fake, backend) as r:
        await fake.text(ALICE, "broken \ud800 text \udfff", name="Al\udc00ice")
        await r.channel.idle()
        await fake.text(ALICE, "and after")
        await r.channel.idle()
        history = [m.content for m in backend.requests[-1].messages if m.role == "user"]
    assert fake.texts(ALICE) == ["one", "two"]
    assert "broken \ufffd text \ufffd" in user_texts(backend)[0]
    assert any("broken \ufffd text" in str(c) for c in history), "kept in the session"
    assert not any("\ud800" in str(c) for c in history)


async def test_lone_surrogates_are_stored_in_the_postgresql_inbox(
    home: Path, fake: FakeWhatsApp, pg_url: str
) -> None:
    backend = ScriptedBackend("stored and answered")
    settings = wa_settings(home, fake, database={"url": pg_url})
    async with running(settings, fake, backend):
        _, body = hooks.text(fake.phone_number_id, ALICE, "\ud83d alone", name="\udc00")
        assert await fake.deliver(body) == 200
        await fake.wait_to(ALICE, 1)
    assert fake.texts(ALICE) == ["stored and answered"]
    assert "\ufffd alone" in user_texts(backend)[0]


def group_message(pnid: str, wa_id: str, text: str) -> dict[str, Any]:
    _, body = hooks.text(pnid, wa_id, text)
    messages_of(body)[0]["group_id"] = GROUP
    return body


async def test_a_group_message_is_never_answered_nor_pairs(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend("never")
    tenants = {"alice": {"whatsapp_ids": [f"+{ALICE}"]}, "bob": {}}
    async with running(wa_settings(home, fake, tenants=tenants), fake, backend) as r:
        pnid = fake.phone_number_id
        code = await r.roost.pairing.issue("bob")
        for wa_id, text in ((ALICE, "hi all"), (STRANGER, "hello group"), (BOB, f"/pair {code}")):
            assert await fake.deliver(group_message(pnid, wa_id, text)) == 200
        await r.channel.idle()
        bound = await r.roost.pairing.bound_tenant("whatsapp", BOB)
        ignored = dict(r.channel.ignored)
        refused = r.events("access.refused")
    assert fake.sent == [] and fake.reads == [] and backend.requests == []
    assert bound is None and refused == []
    assert ignored == {"group": 3}


async def test_an_old_message_is_not_answered(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend("fresh only")
    async with running(wa_settings(home, fake), fake, backend) as r:
        month_ago = time.time() - 30 * 86400
        _, body = hooks.text(fake.phone_number_id, ALICE, "from long ago", at=month_ago)
        assert await fake.deliver(body) == 200
        await fake.text(ALICE, "now")
        await r.channel.idle()
        ignored = dict(r.channel.ignored)
    assert fake.texts(ALICE) == ["fresh only"] and len(backend.requests) == 1
    assert ignored == {"stale": 1}


async def test_a_body_replayed_after_the_seen_window_is_not_answered(
    home: Path, fake: FakeWhatsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = ScriptedBackend("answered once", "again?")
    async with running(wa_settings(home, fake), fake, backend) as r:
        _, body = hooks.text(fake.phone_number_id, ALICE, "transfer it")
        assert await fake.deliver(body) == 200
        await r.channel.idle()
        later = time.time() + (r.channel.store.keep_seen_ms + DAY_MS) / 1000
        await r.channel.store.prune(int(later * 1000))  # the id has left the seen window
        assert await r.roost.database.fetch_value("SELECT count(*) FROM whatsapp_seen") == 0
        monkeypatch.setattr(r.channel, "_clock", lambda: later)
        assert await fake.deliver(body) == 200  # the captured body, signed as it was
        await r.channel.idle()
        ignored = dict(r.channel.ignored)
    assert fake.texts(ALICE) == ["answered once"] and len(backend.requests) == 1
    assert ignored == {"stale": 1}


async def test_a_storage_error_is_logged_without_the_values_it_quotes(
    home: Path,
    fake: FakeWhatsApp,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend("later")) as r:
        _, body = hooks.text(fake.phone_number_id, ALICE, "hello")
        wamid = messages_of(body)[0]["id"]

        async def fails(*_: object) -> bool:  # as the PostgreSQL driver words a bad value
            raise StorageError(f'22000: invalid input for query argument $4: \'{{"wamid":"{wamid}')

        monkeypatch.setattr(r.channel.store, "first_time", fails)
        with caplog.at_level(logging.ERROR, logger="bridge.channels.whatsapp"):
            assert await fake.deliver(body) == 503  # not taken: Meta delivers it again
        monkeypatch.undo()
        assert await fake.deliver(body) == 200
        await r.channel.idle()
    logged = " ".join(rec.getMessage() for rec in caplog.records)
    assert "22000" in logged and wamid[:16] not in logged and "wamid" not in logged
    assert fake.texts(ALICE) == ["later"]
