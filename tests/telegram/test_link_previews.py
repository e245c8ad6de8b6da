"""No link previews: Telegram's servers fetch the first URL of a message to build its
preview, with no click. A model steered by injected content (a fetched page, a
document, an MCP result) could put what its context holds into a URL's query and
have it sent as soon as the answer shows (the attacker pass of session 32). Every
message and every edit roost sends says `link_preview_options: {is_disabled: true}`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, NO_DRAFTS, running, tg_settings
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.timers import Gate, ManualTimer
from tests.waits import until

URL = "https://evil.example/p?d=what-the-context-holds"


def no_preview(params: dict[str, object]) -> bool:
    options = params.get("link_preview_options")
    if isinstance(options, str):
        options = json.loads(options)
    return isinstance(options, dict) and options.get("is_disabled") is True


async def test_an_answer_with_a_link_is_sent_without_a_preview(
    home: Path, fake: FakeBotAPI
) -> None:
    async with running(tg_settings(home, fake), fake, ScriptedBackend(f"Source: {URL}")) as run:
        fake.push_text(ALICE, "summarise the page I sent")
        await run.idle()
    (call,) = fake.calls_of("sendMessage")
    assert URL in str(call.params["text"])
    assert no_preview(call.params), call.params


async def test_a_streamed_draft_and_its_edits_carry_no_preview_either(
    home: Path, fake: FakeBotAPI
) -> None:
    timer = ManualTimer()
    gate = Gate(f"Reading {URL}", " and the rest.")
    async with running(tg_settings(home, fake), fake, gate, replace(NO_DRAFTS, timer=timer)) as run:
        fake.push_text(ALICE, "tell me")
        await gate.reached.wait()
        await until(lambda: timer.waiting >= 2, "typing and the draft wait for the delay")
        timer.fire()
        await until(lambda: fake.sent_to(ALICE), "the draft is sent")
        gate.open()
        await run.idle()
        await until(lambda: fake.sent_to(ALICE)[0].text.endswith("and the rest."))
    calls = fake.calls_of("sendMessage") + fake.calls_of("editMessageText")
    assert len(calls) >= 2 and fake.calls_of("editMessageText"), calls
    for call in calls:
        assert no_preview(call.params), call.params
