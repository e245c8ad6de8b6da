"""An answer in several pieces that fails partway: the outbox sends only what did not arrive.

A 3-piece answer whose piece 2 fails for good (the client's retries all
refused) goes to the outbox with the piece that arrived recorded
(`outbox_parts`, on SQLite and PostgreSQL); the outbox's retry sends pieces
2 and 3 only, so the person gets 1, 2, 3 each once and in order, in the
same daemon or after a restart. A piece that went out without an answer
(`drop`: it may show) is never sent again, and the pieces after it still
follow. An outbox entry's own delivery resumes the same way, and when the
window closes partway the template carries only the pieces not shown.
Offers whose buttons did not arrive follow the rest as their text lines.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge.channels.whatsapp.buttons import as_text
from bridge.channels.whatsapp.render import LIMIT, chunks
from bridge.core.builtin_commands import MORE
from bridge.core.config import Settings
from bridge.schedule.outbox import DeliveryError, OutboxEntry, OutboxStore
from bridge.types.masked import Masked
from tests.conftest import ScriptedBackend
from tests.fakes.fake_whatsapp import Failure, FakeWhatsApp
from tests.storage.conftest import pg_server, pg_url
from tests.waits import until
from tests.whatsapp.conftest import ALICE, FAST, Running, running, wa_settings

__all__ = ["pg_server", "pg_url"]  # the session's PostgreSQL, a database per test

ANSWER = "\n\n".join(f"piece{n} " + "word " * 600 for n in (1, 2, 3))
PIECES = chunks(ANSWER, LIMIT)


def server_error() -> Failure:
    return Failure(500, 1, message="An unknown error occurred")


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """The `[database]` of the test: roost.db in the home, or a PostgreSQL database."""
    if request.param == "sqlite":
        yield {}
    else:
        yield {"database": {"url": request.getfixturevalue("pg_url")}}


def settings_of(home: Path, fake: FakeWhatsApp, database: dict[str, Any]) -> Settings:
    return wa_settings(home, fake, **database)


async def fail_after_the_first_piece(fake: FakeWhatsApp, *, unconfirmed: bool = False) -> None:
    """Piece 1 is held until the failures for piece 2 are queued (every try refused),
    then accepted (with no answer back when `unconfirmed`)."""
    await until(lambda: len(fake.waiting) == 1, "piece 1 sent")
    fake.fail(*(server_error() for _ in range(FAST.attempts)))
    if unconfirmed:
        fake.drop(1)
    fake.release()


async def answered_partway(r: Running, fake: FakeWhatsApp, *, unconfirmed: bool = False) -> None:
    """Alice asks; the answer's piece 2 fails for good and the answer goes to the outbox."""
    await fake.text(ALICE, "hello")  # the window opens
    await fake.wait_sent(1)  # (on PostgreSQL the message is stored first, then answered)
    fake.hold()
    await fake.text(ALICE, "tell me a lot")
    await fail_after_the_first_piece(fake, unconfirmed=unconfirmed)
    kept = "SELECT COUNT(*) FROM outbox WHERE key LIKE 'reply:%' AND leased = 0"
    await until(lambda: r.roost.database.fetch_value(kept), "the answer kept in the outbox")
    await r.channel.idle()
    assert fake.texts()[1:] == PIECES[:1], "piece 1 arrived, 2 failed, 3 was not tried"


async def retried(r: Running) -> None:
    """The outbox's retry of the kept answer (as the scheduler runs it)."""
    outbox = OutboxStore(r.roost.database)
    now = int(time.time() * 1000)
    (entry,) = [e for e in await outbox.claim(now) if e.key.startswith("reply:")]
    await r.outbox(entry)
    assert await outbox.delivered(entry.id, now)


def assert_each_piece_once(fake: FakeWhatsApp) -> None:
    texts = fake.texts()
    assert [t.split(" ", 1)[0] for t in texts] == ["hi", "piece1", "piece2", "piece3"]
    assert texts == ["hi", *PIECES], "each piece once, in order"


def test_the_answer_is_three_pieces() -> None:
    assert len(PIECES) == 3 and [p.split(" ", 1)[0] for p in PIECES] == [
        "piece1",
        "piece2",
        "piece3",
    ]


async def test_a_failed_answer_is_resumed_at_the_piece_that_failed(
    home: Path, fake: FakeWhatsApp, database: dict[str, Any]
) -> None:
    backend = ScriptedBackend("hi", ANSWER)
    async with running(settings_of(home, fake, database), fake, backend) as r:
        await answered_partway(r, fake)
        await retried(r)
    assert_each_piece_once(fake)


async def test_a_failed_answer_is_resumed_after_a_restart(
    home: Path, fake: FakeWhatsApp, database: dict[str, Any]
) -> None:
    settings = settings_of(home, fake, database)
    async with running(settings, fake, ScriptedBackend("hi", ANSWER)) as r:
        await answered_partway(r, fake)
    async with running(settings, fake, ScriptedBackend()) as r:
        await retried(r)
    assert_each_piece_once(fake)


async def test_an_unconfirmed_piece_is_not_resent_and_the_rest_follows(
    home: Path, fake: FakeWhatsApp, database: dict[str, Any]
) -> None:
    """Piece 1 went out with no answer back (it shows), piece 2 failed: the retry sends 2
    and 3, never 1 again."""
    settings = settings_of(home, fake, database)
    async with running(settings, fake, ScriptedBackend("hi", ANSWER)) as r:
        await answered_partway(r, fake, unconfirmed=True)
    async with running(settings, fake, ScriptedBackend()) as r:
        await retried(r)
    assert_each_piece_once(fake)


async def test_offers_whose_buttons_failed_follow_the_text_as_lines(
    home: Path, fake: FakeWhatsApp, database: dict[str, Any]
) -> None:
    """/help's answer is one interactive message (its text as the body, a button); when it
    fails for good, the outbox (text only) sends the text, then the offer as its line."""
    async with running(settings_of(home, fake, database), fake, ScriptedBackend("hi")) as r:
        await fake.text(ALICE, "hello")
        await fake.wait_sent(1)
        fake.fail(*(server_error() for _ in range(1 + FAST.attempts)))  # the read receipt, too
        await fake.text(ALICE, "/help")
        kept = "SELECT COUNT(*) FROM outbox WHERE key LIKE 'reply:%' AND leased = 0"

        async def both_kept() -> bool:  # the text, then its offers
            return await r.roost.database.fetch_value(kept) == 2

        await until(both_kept, "the answer and its offers kept")
        await r.channel.idle()
        assert fake.texts() == ["hi"] and len(fake.sent) == 1, "nothing of /help arrived"
        outbox, now = OutboxStore(r.roost.database), int(time.time() * 1000)
        keys = []
        while entries := await outbox.claim(now):  # the scheduler's order: one per chat
            (entry,) = entries
            keys.append(entry.key)
            await r.outbox(entry)
            assert await outbox.delivered(entry.id, now)
    assert keys[1] == f"{keys[0]}:offers"
    hi, text, offers = fake.texts()
    assert hi == "hi" and text.startswith("Most used:")
    assert offers == as_text((MORE,)) == "/help all — More commands"


async def claim(r: Running, key: str) -> OutboxEntry:
    outbox = OutboxStore(r.roost.database)
    (entry,) = [e for e in await outbox.claim(int(time.time() * 1000)) if e.key == key]
    return entry


async def test_an_outbox_entry_resumes_at_the_piece_that_failed_across_a_restart(
    home: Path, fake: FakeWhatsApp, database: dict[str, Any]
) -> None:
    settings = settings_of(home, fake, database)
    async with running(settings, fake, ScriptedBackend("hi")) as r:
        await fake.text(ALICE, "hello")
        await fake.wait_sent(1)
        entry, task = await _failing_after_piece_one(r, fake, server_error())  # once per claim
        with pytest.raises(DeliveryError) as failed:
            await task
        assert failed.value.kind == "network"
        await OutboxStore(r.roost.database).failed(entry.id, "network", int(time.time() * 1000))
    async with running(settings, fake, ScriptedBackend()) as r:
        await r.roost.database.execute("UPDATE outbox SET due_ms = 0 WHERE key = 'job:j:1'")
        await r.outbox(await claim(r, "job:j:1"))
    assert_each_piece_once(fake)


async def test_a_window_closed_partway_sends_only_the_rest_as_the_template(
    home: Path, fake: FakeWhatsApp
) -> None:
    """Meta says the window closed at piece 2: the template carries pieces 2 and 3 only."""
    template = {"template": "roost_reminder", "template_language": "de"}
    settings = wa_settings(home, fake, whatsapp=template)
    async with running(settings, fake, ScriptedBackend("hi")) as r:
        await fake.text(ALICE, "hello")
        await r.channel.idle()
        window = Failure(400, 131047, message="(#131047) Re-engagement message")
        _, task = await _failing_after_piece_one(r, fake, window)
        await task
    assert fake.texts() == ["hi", PIECES[0]]
    (param,) = fake.sent[-1]["template"]["components"][0]["parameters"]
    assert param["text"].startswith("piece2 word")


async def _failing_after_piece_one(
    r: Running, fake: FakeWhatsApp, failure: Failure
) -> tuple[OutboxEntry, asyncio.Future[None]]:
    """The outbox entry `job:j:1` (the 3-piece answer) claimed and on its way: piece 1
    sent, the next send answered with `failure`; the entry and its delivery."""
    now = int(time.time() * 1000)
    await OutboxStore(r.roost.database).enqueue(
        "alice", "whatsapp", ALICE, Masked(ANSWER), "job:j:1", now_ms=now
    )
    entry = await claim(r, "job:j:1")
    fake.hold()
    task = asyncio.ensure_future(r.outbox(entry))
    await until(lambda: len(fake.waiting) == 1, "piece 1 sent")
    fake.fail(failure)
    fake.release()
    return entry, task
