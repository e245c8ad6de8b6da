"""A draft an interrupted process left in a chat becomes the answer, not a stray half message.

A streamed answer's first draft records the messages it is shown in (the
durable inbox's `shown`); the process that answers the update after a kill
(or a stop) edits those messages into its answer: the person sees one
message, the whole answer, no Stop button left on a half draft above a
second answer. With the real python-telegram-bot against the fake Bot API,
in process; the kill is played by a Bot API that refuses every edit while
the first process stops, so its draft stays exactly as a kill -9 leaves it
(partial text, cursor, Stop button).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bridge.channels.common.chat_queue import Taken
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from tests.telegram.conftest import ALICE, FAST, tg_settings
from tests.telegram.durable import Gate, durable, inbox_rows, until
from tests.telegram.fake_bot_api import Failure, FakeBotAPI

PARTIAL = "The first half of a long answer"


class Stuck:
    """A model that streams the start of an answer, then never finishes it."""

    name = "stuck"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def describe(self) -> str:
        return "a model that never finishes"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.asked.append(str(request.messages[-1].content))
        yield TextDelta(PARTIAL)
        await asyncio.Event().wait()
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


def shown_column(home: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(home / "roost.db")) as conn:
        return [str(s) for (s,) in conn.execute("SELECT shown FROM channel_inbox")]


async def _interrupted(home: Path, fake: FakeBotAPI, *, kill: bool) -> int:
    """A first process shows a draft of the answer to "hello", then stops (`kill`: its
    edits refused, so the draft stays as a kill leaves it); returns the draft's id."""
    first = Stuck()
    async with durable(tg_settings(home, fake), fake, first, options=FAST) as running:
        fake.push_text(ALICE, "hello")
        await fake.wait_until(lambda: any(PARTIAL in m.text for m in fake.sent_to(ALICE)))
        draft = fake.sent_to(ALICE)[0]
        await until(lambda: shown_column(home) == [str(draft.message_id)])
        assert fake.keyboard(ALICE) == [("⏹ Stop", "/stop")]
        if kill:
            for method in ("editMessageText", "editMessageReplyMarkup"):
                fake.fail(method, *[Failure(502, "Bad Gateway")] * 50)
        assert running.channel is not None
    if kill:
        for method in ("editMessageText", "editMessageReplyMarkup"):
            fake.heal(method)
        assert PARTIAL in fake.sent_to(ALICE)[0].text
        assert fake.keyboard(ALICE) == [("⏹ Stop", "/stop")]  # as a kill -9 leaves it
    assert {s for _, s, _ in inbox_rows(home)} <= {"new", "working"}
    return draft.message_id


async def test_a_draft_left_by_a_killed_process_is_edited_into_the_answer(
    home: Path, fake: FakeBotAPI
) -> None:
    draft = await _interrupted(home, fake, kill=True)
    second = Gate(is_open=True)
    async with durable(tg_settings(home, fake), fake, second, owner="second"):
        await until(lambda: all(s == "done" for _, s, _ in inbox_rows(home)))
    messages = [m for m in fake.sent_to(ALICE) if not m.deleted]
    assert [(m.message_id, m.text) for m in messages] == [(draft, "echo: hello")]
    assert fake.keyboard(ALICE) == []  # no Stop button left on anything


async def test_a_draft_a_stopped_process_marked_is_edited_into_the_answer(
    home: Path, fake: FakeBotAPI
) -> None:
    draft = await _interrupted(home, fake, kill=False)
    assert "answer stopped" in fake.sent_to(ALICE)[0].text  # the stop said so meanwhile
    second = Gate(is_open=True)
    async with durable(tg_settings(home, fake), fake, second, owner="second"):
        await until(lambda: all(s == "done" for _, s, _ in inbox_rows(home)))
    messages = [m for m in fake.sent_to(ALICE) if not m.deleted]
    assert [(m.message_id, m.text) for m in messages] == [(draft, "echo: hello")]
    assert fake.keyboard(ALICE) == []


async def test_a_draft_the_person_deleted_meanwhile_gets_the_answer_anew(
    home: Path, fake: FakeBotAPI
) -> None:
    draft = await _interrupted(home, fake, kill=True)
    fake.messages[(ALICE, draft)].deleted = True  # the person deleted the half answer
    second = Gate(is_open=True)
    async with durable(tg_settings(home, fake), fake, second, owner="second"):
        await until(lambda: all(s == "done" for _, s, _ in inbox_rows(home)))
    messages = [m for m in fake.sent_to(ALICE) if not m.deleted]
    assert [m.text for m in messages] == ["echo: hello"]
    assert messages[0].message_id != draft


async def test_a_draft_that_cannot_be_edited_loses_its_stop_button(
    home: Path, fake: FakeBotAPI
) -> None:
    """The killed process's draft cannot be edited (a 400 other than "not found"): the
    answer went anew, and the half draft kept its Stop button above it (s40 left). The
    answer still goes anew; the button is taken off."""
    draft = await _interrupted(home, fake, kill=True)
    fake.fail("editMessageText", Failure(400, "Bad Request: message can't be edited"))
    second = Gate(is_open=True)
    async with durable(tg_settings(home, fake), fake, second, owner="second"):
        await until(lambda: all(s == "done" for _, s, _ in inbox_rows(home)))
    messages = fake.sent_to(ALICE)
    assert [m.text for m in messages] == [f"{PARTIAL} …", "echo: hello"]
    assert messages[0].message_id == draft
    assert fake.keyboard(ALICE) == []  # no Stop button on the half draft


def _stored_as_sent_days_ago(home: Path, days: int) -> tuple[int, dict[str, Any]]:
    """The stored update's message, dated `days` ago (roost was away); (id, payload)."""
    with contextlib.closing(sqlite3.connect(home / "roost.db")) as conn, conn:
        ((update_id, payload),) = conn.execute("SELECT update_id, payload FROM channel_inbox")
        update = json.loads(payload)
        update["message"]["date"] = int(time.time()) - days * 86_400
        conn.execute(
            "UPDATE channel_inbox SET payload = ? WHERE update_id = ?",
            (json.dumps(update), update_id),
        )
    return int(update_id), update


async def test_a_draft_whose_update_is_too_old_now_loses_its_stop_button(
    home: Path, fake: FakeBotAPI
) -> None:
    """The next process drops the update as too old (the person is told): the killed
    process's half draft kept its Stop button (s40 left). The button is taken off."""
    draft = await _interrupted(home, fake, kill=True)
    _stored_as_sent_days_ago(home, 3)
    second = Gate(is_open=True)
    settings = tg_settings(home, fake, answer_max_age_s=86_400)
    async with durable(settings, fake, second, owner="second"):
        await until(lambda: [s for _, s, _ in inbox_rows(home)] == ["dropped"])
        await fake.wait_until(lambda: any(m.text.startswith("⌛") for m in fake.sent_to(ALICE)))
    messages = fake.sent_to(ALICE)
    assert messages[0].message_id == draft and PARTIAL in messages[0].text
    assert "too late to answer" in messages[1].text
    assert fake.keyboard(ALICE) == []
    assert second.asked == []


async def test_a_draft_whose_update_is_given_up_loses_its_stop_button(
    home: Path, fake: FakeBotAPI
) -> None:
    """An update taken too often without an answer (a cluster's instances dying on it) is
    given up and the person told once; the half draft kept its Stop button (s40 left)."""
    draft = await _interrupted(home, fake, kill=True)
    update_id, payload = _stored_as_sent_days_ago(home, 0)
    with contextlib.closing(sqlite3.connect(home / "roost.db")) as conn, conn:
        conn.execute("UPDATE channel_inbox SET state = 'dropped'")  # not replayed here
    second = Gate(is_open=True)
    async with durable(tg_settings(home, fake), fake, second, owner="second") as running:
        assert running.channel is not None
        taken = Taken(update_id, str(ALICE), "m", payload, tries=4, shown=(draft,))
        await running.channel._give_up(taken)  # what `Shared` calls past its tries
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 2)
    messages = fake.sent_to(ALICE)
    assert messages[0].message_id == draft and PARTIAL in messages[0].text
    assert fake.keyboard(ALICE) == []
