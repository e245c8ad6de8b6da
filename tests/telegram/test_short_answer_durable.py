"""A short answer with the channel wired as the daemon wires it (durable inbox, outbox):
one `sendMessage` and nothing else, and the chat is free for its next message the
moment that answer went out; the inbox's write of "answered" comes after the turn.

"Later" is a `ManualTimer` that is never fired (the answers are faster than any
delay), and the inbox's write is held by the test: nothing here waits for a time.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from tests.telegram.conftest import ALICE, NO_DRAFTS, tg_settings
from tests.telegram.durable import Gate, durable, inbox_rows, until
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.timers import ManualTimer

EXTRA = ("sendChatAction", "editMessageText", "editMessageReplyMarkup", "deleteMessage")


async def test_a_short_answer_is_one_send_message_with_the_durable_inbox(
    home: Path, fake: FakeBotAPI
) -> None:
    options = replace(NO_DRAFTS, timer=ManualTimer())
    async with durable(tg_settings(home, fake), fake, Gate(is_open=True), options=options):
        for n in range(3):  # each once the previous one is marked answered (its turn ended)
            fake.push_text(ALICE, f"ping {n}")
            await until(lambda n=n: [s for _, s, _ in inbox_rows(home)] == ["done"] * (n + 1))
    assert [m.text for m in fake.sent_to(ALICE)] == [f"echo: ping {n}" for n in range(3)]
    assert len(fake.calls_of("sendMessage")) == 3
    assert all(fake.calls_of(method) == [] for method in EXTRA), "no typing, draft or edit"
    assert fake.calls_of("setMessageReaction") == [], "no 👀: no message waited"


async def test_the_chat_is_free_while_its_last_answer_is_being_marked(
    home: Path, fake: FakeBotAPI
) -> None:
    options = replace(NO_DRAFTS, timer=ManualTimer())
    async with durable(tg_settings(home, fake), fake, Gate(is_open=True), options=options) as r:
        assert r.channel.durable is not None
        inbox, locks = r.channel.durable.inbox, r.roost.core.locks
        write, held = inbox.done, asyncio.Event()
        writing: list[int] = []
        marked: list[int] = []

        async def slow_done(update_id: int, *, dropped: bool = False) -> None:
            writing.append(update_id)
            await held.wait()  # the write of "answered" takes its time
            await write(update_id, dropped=dropped)
            marked.append(update_id)

        inbox.done = slow_done  # type: ignore[method-assign]
        try:
            first = fake.push_text(ALICE, "first")
            await until(lambda: writing == [first])
            assert len(locks) == 0, "the chat's lock is not held for the inbox's write"
            second = fake.push_text(ALICE, "second")
            await until(lambda: writing == [first, second])
            assert fake.calls_of("setMessageReaction") == [], "it did not wait: no 👀"
            assert marked == []  # both answered, neither write done yet
        finally:
            held.set()
        await until(lambda: marked == [first, second])
        await until(lambda: [s for _, s, _ in inbox_rows(home)] == ["done", "done"])
    assert [m.text for m in fake.sent_to(ALICE)] == ["echo: first", "echo: second"]
