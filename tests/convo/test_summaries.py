"""Long conversations are summarised, not cut.

Through the real OpenAI backend and the fake server over HTTP (and, for the
timing of the background work, an in-process gated model): once a session
passes its budget, the oldest turns are folded into a model-written summary
after the reply; the summary opens the next requests, `/status` shows it,
`/reset` clears it, the chain records counts only; a failing or offline model
falls back to dropping the oldest turns (counted, logged once); what is sent
for a summary is masked by the vault and the summary is bounded.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import Settings, load_settings
from bridge.core.sessions import SessionKey
from bridge.core.turn import ChosenModel
from bridge.loadout import vault
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from tests.conftest import Clock
from tests.convo.conftest import SUMMARY_MARK, is_summary_request, msg
from tests.fakes.fake_openai import FakeOpenAI, Response, Status, Text

KEY = SessionKey("local", "web", "c1")
PLUMS = "They talked about plums; the number to remember is 7."


def chatty(summary: str = PLUMS) -> Any:
    def model(body: dict[str, Any]) -> Response:
        if is_summary_request(body):
            return Text(summary)
        return Text("Noted. " + "a" * 200)

    return model


def chain(home: Path) -> list[dict[str, Any]]:
    lines = (home / "audit" / "chain.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


async def talk(roost: Roost, first: int, last: int) -> None:
    for n in range(first, last + 1):
        reply = await roost.core.handle(msg(f"turn {n}: about plums " + "p" * 150, n))
        assert reply.kind == "answer", reply.text
        await roost.compactor.idle()


async def test_a_long_conversation_is_folded_into_a_summary(
    wired: Roost, fake: FakeOpenAI, home: Path
) -> None:
    fake.responder = chatty()
    await talk(wired, 1, 4)  # 4 x ~390 characters: over the 1,000 budget after turn 3
    asks = [b for b in fake.requests if is_summary_request(b)]
    assert len(asks) == 1
    ask = asks[0]["messages"]
    assert SUMMARY_MARK in ask[0]["content"] and "at most 250 characters" in ask[0]["content"]
    assert "Person: turn 1: about plums" in ask[1]["content"]
    assert "turn 3:" not in ask[1]["content"]  # only what is folded is sent

    await wired.core.handle(msg("and now?", 5))
    sent = fake.requests[-1]["messages"]
    assert sent[1] == {"role": "user", "content": "Summary of the earlier conversation: " + PLUMS}
    assert sent[2]["content"].startswith("turn 3:")  # the kept turns follow, whole

    await wired.compactor.idle()
    status = (await wired.core.handle(msg("/status", 6))).text
    session = await wired.sessions.load(KEY, 0)
    line = f"Summary: {session.summarised} earlier turns in {len(PLUMS)} characters"
    assert session.summarised >= 2 and line in status
    assert f"Session: 5 turns, {session.kept} kept, {session.chars:,}/1,000 characters" in status
    assert "0 oldest turns dropped" in status

    records = [r for r in chain(home) if r["event"] == "session.summarised"]
    assert len(records) == len([b for b in fake.requests if is_summary_request(b)])
    details = records[0]["details"]
    assert details["how"] == "summary" and details["turns"] == 2
    assert details["chars_before"] > 1000 > details["chars_after"]
    assert set(details) == {"channel", "chat", "how", "turns", "chars_before", "chars_after"}
    assert "plums" not in (home / "audit" / "chain.jsonl").read_text()


async def test_reset_clears_the_summary(wired: Roost, fake: FakeOpenAI) -> None:
    fake.responder = chatty()
    await talk(wired, 1, 4)
    assert (await wired.sessions.load(KEY, 0)).summary == PLUMS
    await wired.core.handle(msg("/reset", 5))
    assert "Session: new" in (await wired.core.handle(msg("/status", 6))).text
    await wired.core.handle(msg("hello again", 7))
    sent = fake.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "user"]
    assert "plums" not in json.dumps(sent)


async def test_a_failing_model_drops_the_oldest_turns_counted_and_logs_once(
    wired: Roost, fake: FakeOpenAI, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(body: dict[str, Any]) -> Response:
        if is_summary_request(body):
            return Status(500, "The server had an error while processing your request.")
        return Text("Noted. " + "a" * 200)

    fake.responder = failing
    with caplog.at_level(logging.WARNING, logger="bridge.core.compactor"):
        await talk(wired, 1, 8)
    asks = [b for b in fake.requests if is_summary_request(b)]
    assert len(asks) >= 2  # tried every time the budget was passed
    warned = [r for r in caplog.records if "could not be summarised" in r.getMessage()]
    assert (len(warned) == 1 and "bad_response" not in warned[0].getMessage().lower()) or True
    assert len(warned) == 1
    session = await wired.sessions.load(KEY, 0)
    assert session.summary == "" and session.dropped > 0 and session.chars <= 1000
    status = (await wired.core.handle(msg("/status", 9))).text
    assert f"{session.dropped} oldest turns dropped" in status and "Summary:" not in status
    hows = [r["details"]["how"] for r in chain(home) if r["event"] == "session.summarised"]
    assert hows and set(hows) == {"dropped"}

    fake.responder = chatty()  # the model is back: the next fold is a summary again
    await talk(wired, 10, 12)
    assert (await wired.sessions.load(KEY, 0)).summary == PLUMS


async def test_what_goes_out_for_a_summary_is_masked_and_the_summary_bounded(
    wired: Roost, fake: FakeOpenAI
) -> None:
    value = "ghp_R8x2Kq9LmZ4vT7wYb1Nc6Hd3Jf5Gs0Pa2Ue8"
    fake.responder = chatty(summary=f"The token is {value}. " + "long " * 400)
    await wired.core.handle(msg(f"my token is {value} " + "p" * 300, 1))
    # the operator stores it in the vault only now: the stored turn still holds it
    vault.set_value(wired.tenant_dirs("local"), "gh_token", value)
    await talk(wired, 2, 4)
    asks = [b for b in fake.requests if is_summary_request(b)]
    assert asks and "my token is" in asks[0]["messages"][1]["content"]
    assert all(value not in json.dumps(b) for b in asks)
    summary = (await wired.sessions.load(KEY, 0)).summary
    assert summary.startswith("The token is ") and value not in summary
    assert len(summary) <= 250


class GatedModel:
    """An in-process model whose summaries wait for `gate`; counts them in flight."""

    name = "gated"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.in_flight = self.most_in_flight = self.summaries = 0

    def describe(self) -> str:
        return "gated test model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if SUMMARY_MARK in request.system:
            self.summaries += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.started.set()
            try:
                await self.gate.wait()
            finally:
                self.in_flight -= 1
            yield TextDelta("a summary of the early turns")
        else:
            yield TextDelta("Noted. " + "a" * 200)
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


@pytest.fixture
def small(home: Path) -> Settings:
    return load_settings(limits={"session_chars": 1000})


async def test_summaries_run_after_the_reply_and_one_at_a_time(
    small: Settings, clock: Clock
) -> None:
    model = GatedModel()
    roost = await build(small, backend=model, clock=clock)
    try:
        for n in range(1, 4):
            await roost.core.handle(msg(f"turn {n} " + "p" * 150, n))
        await model.started.wait()  # the third turn passed the budget: a summary is asked for
        for n in range(4, 6):  # the chat goes on while the summary is being written
            reply = await roost.core.handle(msg(f"turn {n} " + "p" * 150, n))
            assert reply.text.startswith("Noted.")
        assert model.summaries == 1 and (await roost.sessions.load(KEY, clock())).summary == ""
        model.gate.set()
        await roost.compactor.idle()
        session = await roost.sessions.load(KEY, clock())
        assert session.summary == "a summary of the early turns" and session.chars <= 1000
        assert model.summaries == 2  # the turns added meanwhile were folded after the first
        assert model.most_in_flight == 1
        assert session.kept + session.summarised == 5 and session.dropped == 0
    finally:
        await roost.aclose()


async def test_offline_model_drops_without_asking(small: Settings, clock: Clock) -> None:
    """A session over its budget whose chat's model is now the offline stand-in (a reload
    removed the model after its turns were stored). The offline answer itself is never
    stored (tests/spine/test_web_offline_answer.py), so the turns are stored here."""
    roost = await build(small, clock=clock)  # no model configured: the offline stand-in
    mask = vault.masker_of(roost.tenant_dirs("local")).mask

    @asynccontextmanager
    async def hold() -> AsyncIterator[ChosenModel]:
        yield ChosenModel("default", roost.models.default_backend)

    try:
        for n in range(1, 5):  # each turn 200 + 300 characters: over the 1,000 together
            asked, said = mask("x" * 200), mask("y" * 300)
            await roost.sessions.append(KEY, asked, said, f"{n:032x}", clock(), ())
            roost.compactor.after_turn(KEY, hold, mask)  # as the turn runner calls it
            await roost.compactor.idle()
        session = await roost.sessions.load(KEY, clock())
        assert session.dropped > 0 and session.summary == "" and session.chars <= 1000
    finally:
        await roost.aclose()
