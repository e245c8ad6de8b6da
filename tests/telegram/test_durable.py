"""The durable inbox with the real python-telegram-bot against the fake Bot API, in process.

Every update is committed before the `getUpdates` offset that confirms it
(or, by webhook, before the 200); what a stopped channel left unanswered is
answered by the next one in each chat's order, exactly once; a message that
arrives too late is not answered and the person is told; an update Telegram
sends twice is answered once. (Kills of the real daemon:
tests/telegram/test_durable_daemon.py.)
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bridge.channels.web.channel import WebChannel
from bridge.core.commands import Command, CommandContext
from bridge.core.config import Settings, load_settings
from bridge.types.messages import Final, OutFile
from tests.telegram.conftest import ALICE, GROUP, NO_DRAFTS, TOKEN, tg_settings
from tests.telegram.durable import Gate, durable, inbox_rows, outbox_rows, until
from tests.telegram.fake_bot_api import FakeBotAPI

BOB = 222222
SECRET = "s3cret_webhook-token"


def texts(fake: FakeBotAPI, chat: int) -> list[str]:
    return [m.text for m in fake.sent_to(chat)]


def two_people(home: Path, fake: FakeBotAPI) -> Settings:
    return load_settings(
        home=home,
        telegram={"token": TOKEN, "api_base_url": fake.base_url},
        tenants={"alice": {"telegram_ids": [ALICE]}, "bob": {"telegram_ids": [BOB]}},
    )


async def test_each_update_is_committed_before_its_offset_is_confirmed(
    home: Path, fake: FakeBotAPI
) -> None:
    stored_at_confirm: list[tuple[int, bool]] = []

    def check(ids: list[int]) -> None:  # runs inside the fake, as getUpdates confirms ids
        with sqlite3.connect(home / "roost.db") as conn:
            have = {u for (u,) in conn.execute("SELECT update_id FROM channel_inbox")}
        stored_at_confirm.extend((uid, uid in have) for uid in ids)

    fake.on_confirm = check
    gate = Gate()
    async with durable(tg_settings(home, fake), fake, gate):
        ids = [fake.push_text(ALICE, f"q{n}") for n in range(3)]
        await fake.wait_until(lambda: set(fake.confirmed) >= set(ids))
        assert stored_at_confirm == [(uid, True) for uid in ids]
        gate.open()
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 3)
        await until(lambda: all(s == "done" for _, s, _ in inbox_rows(home)))
    assert texts(fake, ALICE) == ["echo: q0", "echo: q1", "echo: q2"]
    assert [p for _, _, p in inbox_rows(home)] == ["", "", ""], "no text kept once answered"


async def test_what_a_stopped_channel_left_is_answered_next_time_in_chat_order(
    home: Path, fake: FakeBotAPI
) -> None:
    settings = two_people(home, fake)
    first = Gate()  # never answers: roost stops with everything still open
    async with durable(settings, fake, first):
        for n in range(4):
            fake.push_text(ALICE, f"a{n}")
            fake.push_text(BOB, f"b{n}")
        await fake.wait_until(lambda: len(fake.confirmed) == 8)
        await fake.wait_until(lambda: len(first.asked) >= 2)  # a turn runs in each chat
    assert fake.calls_of("sendMessage") == []
    assert {s for _, s, _ in inbox_rows(home)} <= {"new", "working"}

    second = Gate(is_open=True)
    async with durable(settings, fake, second, owner="second"):
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) + len(fake.sent_to(BOB)) == 8)
        await until(lambda: all(s == "done" for _, s, _ in inbox_rows(home)))
    assert texts(fake, ALICE) == [f"echo: a{n}" for n in range(4)]
    assert texts(fake, BOB) == [f"echo: b{n}" for n in range(4)]
    assert Counter(second.asked) == Counter(
        [f"a{n}" for n in range(4)] + [f"b{n}" for n in range(4)]
    )


async def test_a_message_that_arrives_too_late_is_not_answered_and_the_person_is_told(
    home: Path, fake: FakeBotAPI
) -> None:
    gate = Gate(is_open=True)
    old = int(time.time()) - 3 * 86_400  # roost was away three days
    async with durable(tg_settings(home, fake, answer_max_age_s=86_400), fake, gate):
        fake.push_text(ALICE, "stale question", message_id=9001, extra={"date": old})
        fake.push_text(ALICE, "fresh question")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 2)
        await until(lambda: all(s != "working" for _, s, _ in inbox_rows(home)))
    shown = texts(fake, ALICE)
    assert "echo: fresh question" in shown
    (told,) = [t for t in shown if t.startswith("⌛")]
    assert "72 h later, too late to answer" in told and "send it again" in told
    assert gate.asked == ["fresh question"]
    assert [s for _, s, _ in inbox_rows(home)] == ["dropped", "done"]
    assert [k for k, _, _ in outbox_rows(home)] == ["dropped:9001"]


async def test_an_update_telegram_sends_twice_is_answered_once(
    home: Path, fake: FakeBotAPI
) -> None:
    settings = tg_settings(
        home, fake, mode="webhook", webhook_url="https://roost.example/hook", webhook_secret=SECRET
    )
    gate = Gate(is_open=True)
    web = WebChannel(lambda i, d: None, list, "web-token", "127.0.0.1", 0)  # type: ignore[arg-type,return-value]
    async with durable(settings, fake, gate, web_app=web.app):
        await web.start()
        try:
            update = {"update_id": 77, "message": fake.message(ALICE, "only once")}
            url = f"http://127.0.0.1:{web.port}/hook"
            headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
            async with aiohttp.ClientSession() as http:
                async with http.post(url, json=update, headers=headers) as resp:
                    assert resp.status == 200
                # committed before the 200 was written
                assert [(u, bool(p)) for u, _, p in inbox_rows(home)] in (
                    [(77, True)],
                    [(77, False)],
                )
                async with http.post(url, json=update, headers=headers) as resp:
                    assert resp.status == 200  # a redelivery (Telegram lost our 200)
            await fake.wait_until(lambda: bool(fake.sent_to(ALICE)))
            await until(lambda: inbox_rows(home)[0][1] == "done")
        finally:
            await web.stop()
    assert texts(fake, ALICE) == ["echo: only once"] and gate.asked == ["only once"]


async def test_updates_roost_does_not_answer_are_settled_too(home: Path, fake: FakeBotAPI) -> None:
    gate = Gate(is_open=True)
    async with durable(tg_settings(home, fake), fake, gate):
        fake.push_text(ALICE, "edited", kind="edited_message")
        fake.push_text(999, "a stranger")  # refused once
        fake.push_text(999, "the stranger again")  # silence
        fake.push_text(ALICE, "hi", chat_id=GROUP, chat_type="supergroup")  # group not allowed
        fake.push_text(ALICE, "last")
        await fake.wait_until(lambda: bool(fake.sent_to(ALICE)))
        await until(lambda: all(s == "done" for _, s, _ in inbox_rows(home)))
    assert len(inbox_rows(home)) == 5


async def test_an_answer_counts_once_its_text_arrived_before_its_files(
    home: Path, fake: FakeBotAPI
) -> None:
    path = home / "tenants" / "alice" / "workspace" / "outputs" / "big.csv"
    path.parent.mkdir(parents=True)
    path.write_text("a,b\n")

    async def files(ctx: CommandContext, args: str) -> Final:
        return Final("here", files=(OutFile(path, "big.csv", "text/csv"),))

    fake.hold("sendDocument")  # the upload hangs (a kill now must not answer again)
    async with durable(tg_settings(home, fake), fake, Gate(is_open=True)) as r:
        r.roost.core.commands.add(Command("files", "/files", "a file", files))
        fake.push_text(ALICE, "/files")
        await fake.wait_call("sendDocument")
        await until(lambda: [s for _, s, _ in inbox_rows(home)] == ["done"])
        assert texts(fake, ALICE) == ["here"] and fake.documents_to(ALICE) == []
        fake.release()
        await fake.wait_until(lambda: bool(fake.documents_to(ALICE)))


async def test_updates_that_a_full_disk_cannot_store_are_logged_once_as_such(
    home: Path, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ops38 M3: each try logged three lines (an ERROR without the cause, a WARNING that the
    Bot API was unreachable and to check ROOST_TELEGRAM__API_BASE_URL, then "connected
    again"): 18 lines in 20 s, with the wrong advice. Now one line says the disk is full,
    and once there is room the message is answered (nothing lost). The store fails as
    SQLite's does on a full disk (a real one: the WAL cannot grow)."""
    from bridge.channels.telegram.inbox import UpdateInbox
    from bridge.storage.errors import StorageError

    full = asyncio.Event()
    full.set()
    store = UpdateInbox.store

    async def no_room(self: UpdateInbox, *args: Any, **kwargs: Any) -> Any:
        if full.is_set():
            try:
                raise sqlite3.OperationalError("database or disk is full")
            except sqlite3.OperationalError as exc:
                raise StorageError(str(exc)) from exc
        return await store(self, *args, **kwargs)

    caplog.set_level(logging.INFO, logger="bridge.channels.telegram")
    # python-telegram-bot retries a failed poll after 1 s, then 1.5 s, ...; from 1.5 times
    # the poll interval when there is one: 0.015 s, then 0.0225 s, ...
    options = dataclasses.replace(NO_DRAFTS, poll_interval_s=0.01)
    async with durable(tg_settings(home, fake), fake, Gate(is_open=True), options=options):
        monkeypatch.setattr(UpdateInbox, "store", no_room)
        before = len(fake.calls_of("getUpdates"))
        fake.push_text(ALICE, "hello on a full disk")
        await fake.wait_until(lambda: len(fake.calls_of("getUpdates")) >= before + 3)
        lines = [r.getMessage() for r in caplog.records if "telegram" in r.name]
        told = [line for line in lines if "could not be stored" in line]
        assert len(told) == 1 and "the disk is full" in told[0], lines
        assert not [line for line in lines if "unreachable" in line or "connected again" in line]
        assert fake.sent_to(ALICE) == []
        full.clear()
        await fake.wait_until(lambda: texts(fake, ALICE) == ["echo: hello on a full disk"])
        assert sum("connected again" in r.getMessage() for r in caplog.records) == 1
