"""An answer that went out just before a kill -9 is not asked of the model again, nor stored twice.

The real `roost serve` against the fake Bot API: the answer's `sendMessage`
takes effect (the person sees it) but its confirmation is held back
(`FakeBotAPI.stall`), so the daemon is killed between the answer going out
and the update's done mark, deterministically. After the restart the update
is open in the durable inbox; the session already holds its turn, so its
stored answer is what is delivered again, never a second turn:
the model was asked once, the session holds the person's message once, and
every text the person got is that one answer. (Before: the restart asked the
model again and stored the turn a second time, a second, different answer.)
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

from tests.fakes.fake_openai import FakeOpenAI, Responder, Text, last_user_text
from tests.telegram.conftest import ALICE
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.test_durable_daemon import (  # noqa: F401  (fixtures)
    LIMIT_S,
    Launch,
    config,
    fake,
    idle,
    launch,
    model,
)
from tests.waits import until


def asked_about(server: FakeOpenAI, question: str) -> int:
    return sum(1 for body in server.requests if question in last_user_text(body))


def user_turns(home: Path, question: str) -> int:
    with contextlib.closing(sqlite3.connect(home / "roost.db", timeout=30)) as conn:
        (n,) = conn.execute(
            "SELECT COUNT(*) FROM session_messages WHERE role = 'user' AND content LIKE ?",
            (f"%{question}%",),
        ).fetchone()
    return int(n)


def numbered(count: list[int]) -> Responder:
    """A model whose every answer is a different text (a second turn would show)."""

    def respond(body: dict[str, Any]) -> Text:
        count[0] += 1
        return Text(f"answer {count[0]} to {last_user_text(body)}")

    return respond


async def test_an_answer_out_before_a_kill_is_neither_asked_again_nor_stored_twice(
    launch: Launch,  # noqa: F811
    fake: FakeBotAPI,  # noqa: F811
    model: FakeOpenAI,  # noqa: F811
    home: Path,
) -> None:
    model.responder = numbered([0])
    fake.stall("sendMessage")  # shown to the person; roost never hears that it was
    daemon = await launch()
    fake.push_text(ALICE, "q0")
    await fake.wait_until(lambda: fake.sent_count[ALICE] == 1, LIMIT_S)
    await daemon.kill()  # between the answer going out and its done mark
    fake.release()
    await until(fake.quiet, "the killed daemon's last calls answered")
    assert [m.text for m in fake.sent_to(ALICE)] == ["answer 1 to q0"]

    daemon = await launch()
    await idle(home, fake, 1)  # nothing open in the inbox, nothing queued in the outbox
    await daemon.stop()
    assert asked_about(model, "q0") == 1  # was 2: asked again after the restart
    assert user_turns(home, "q0") == 1  # was 2: the turn stored twice
    assert {m.text for m in fake.sent_to(ALICE)} == {"answer 1 to q0"}  # never a second answer
