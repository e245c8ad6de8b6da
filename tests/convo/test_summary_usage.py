"""Usage counted everywhere: summaries and the steps of a turn that failed mid-way.

The fake OpenAI server reports usage as api.openai.com does. A summary's
tokens are counted in the tenant's usage under the chat's model name (not as
a turn); a tenant whose token budget is used up gets no summary (its oldest
turns are dropped instead, as when the model fails); a turn whose second model
step fails still counts the tokens its first step used.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from bridge.core.sessions import SessionKey
from tests.convo.conftest import API_KEY, NumbersSource, is_summary_request, msg
from tests.fakes.fake_openai import Call, FakeOpenAI, Response, Status, Text, ToolCalls
from tests.models.conftest import write_config

KEY = SessionKey("local", "web", "c1")
PLUMS = "They talked about plums; the number to remember is 7."
TURN_USAGE, SUMMARY_USAGE = (100, 10), (400, 30, 64)


async def usage_rows(roost: Roost) -> list[tuple[Any, ...]]:
    return await roost.database.fetch_all(
        "SELECT tenant, model, SUM(turns), SUM(prompt_tokens), SUM(completion_tokens), "
        "SUM(cached_tokens) FROM token_usage GROUP BY tenant, model ORDER BY tenant, model"
    )


def metered(body: dict[str, Any]) -> Response:
    if is_summary_request(body):
        return Text(PLUMS, usage=SUMMARY_USAGE)
    return Text("Noted. " + "a" * 200, usage=TURN_USAGE)


@pytest.fixture
async def roost_on(
    home: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Any]:
    """Build a roost over the fake server with extra TOML (a named model, budgets)."""
    made: list[Roost] = []

    async def factory(extra: str = "") -> Roost:
        write_config(
            f'[llm]\nbase_url = "{fake.base_url}"\napi_key = "{API_KEY}"\nmodel = "m1"\n'
            f"max_retries = 0\n[limits]\nsession_chars = 1000\n{extra}"
        )
        roost = await build(load_settings(), tool_sources=(NumbersSource(),))
        made.append(roost)
        return roost

    yield factory
    for roost in made:
        await roost.aclose()


async def talk(roost: Roost, first: int, last: int) -> list[str]:
    kinds = []
    for n in range(first, last + 1):
        reply = await roost.core.handle(msg(f"turn {n}: about plums " + "p" * 150, n))
        kinds.append(reply.kind)
        await roost.compactor.idle()
    return kinds


async def test_summaries_are_counted_under_the_chats_model(roost_on: Any, fake: FakeOpenAI) -> None:
    smart = f'[models.smart]\nbase_url = "{fake.base_url}"\napi_key = "{API_KEY}"\nmodel = "m1"\n'
    roost = await roost_on(smart)
    fake.responder = metered
    assert "now uses smart" in (await roost.core.handle(msg("/model smart", 0))).text
    assert await talk(roost, 1, 6) == ["answer"] * 6
    asks = len([b for b in fake.requests if is_summary_request(b)])
    assert asks >= 2 and (await roost.sessions.load(KEY, 0)).summary == PLUMS
    p, c, k = SUMMARY_USAGE
    t_in, t_out = TURN_USAGE
    # six turns, and every summary's tokens; the summaries are not counted as turns
    assert await usage_rows(roost) == [
        ("local", "smart", 6, 6 * t_in + asks * p, 6 * t_out + asks * c, asks * k)
    ]
    shown = (await roost.core.handle(msg("/usage", 7))).text
    assert f"smart: {6 * t_in + asks * p:,} in (cached {asks * k:,})" in shown


async def test_a_used_up_budget_drops_instead_of_summarising(
    roost_on: Any, fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    roost = await roost_on("daily_tokens = 12000\n")

    def big(body: dict[str, Any]) -> Response:
        if is_summary_request(body):
            return Text(PLUMS, usage=SUMMARY_USAGE)
        return Text("Noted. " + "a" * 200, usage=(5000, 10))

    fake.responder = big
    with caplog.at_level(logging.WARNING, logger="bridge.core.compactor"):
        # turn 3 is allowed (10,020 used before it) and passes both budgets
        assert await talk(roost, 1, 3) == ["answer", "answer", "answer"]
    assert not [b for b in fake.requests if is_summary_request(b)]  # no model was asked
    session = await roost.sessions.load(KEY, 0)
    assert session.summary == "" and session.dropped > 0 and session.chars <= 1000
    assert any("token budget is used up" in r.getMessage() for r in caplog.records)
    assert (await roost.core.handle(msg("more?", 4))).kind == "refusal"
    assert await usage_rows(roost) == [("local", "default", 3, 15000, 30, 0)]


async def test_a_turn_that_fails_mid_way_counts_the_steps_that_completed(
    roost_on: Any, fake: FakeOpenAI
) -> None:
    roost = await roost_on()
    fake.script(
        ToolCalls([Call("numbers", {"count": 2})], usage=(300, 20, 256)),
        Status(500, "The server had an error while processing your request."),
    )
    reply = await roost.core.handle(msg("give me numbers", 1))
    assert reply.kind == "error"
    assert len(fake.requests) == 2  # the tool ran, the second step failed
    assert await usage_rows(roost) == [("local", "default", 1, 300, 20, 256)]
    fake.script(Status(500, "down"))  # a turn whose first step fails used nothing
    assert (await roost.core.handle(msg("again", 2))).kind == "error"
    assert await usage_rows(roost) == [("local", "default", 1, 300, 20, 256)]
