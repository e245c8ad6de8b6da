"""The outcome judge's plumbing through a real roost and a scripted judge on the fake OpenAI server.

Real SQLite, the real core and turn runner, the real OpenAI backend talking
to the fake server; the judge's labels are scripted (its real quality needs
a real model). Covered: asked only after the reply went out, batching of
follow-ups that queue up, the cache, the daily cap, strict parsing, the
offline fallback, vault masking, token counting, and the late label
reaching the skill grades and the style learner's input.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.audit.catalogue import EVENTS
from bridge.core.config import load_settings
from bridge.core.usage import utc_day
from bridge.grading.judge_store import JudgeUsage
from bridge.loadout.vault import set_value
from bridge.skills.grades import SkillGrades
from bridge.style.aggregate import graded_turns
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from tests.conftest import Clock
from tests.grading.judge_fake import ScriptedJudge, items_of
from tests.waits import until

KEY = "sk-judge"
ASK = "How do I show hidden files in my shell?"
REPLY = "Using hidden_files: run ls -a to list them."
AGAIN = "what is the command to list dotfiles"  # lexically neutral, a rephrase in meaning
SKILL = "---\ndescription: list hidden dotfiles in a shell\n---\n1. ls -a\n"


@pytest.fixture
async def fake() -> AsyncIterator[ScriptedJudge]:
    async with ScriptedJudge({ASK: REPLY}, api_key=KEY, models=["m1"]) as server:
        yield server


BUILT: list[Roost] = []


@pytest.fixture(autouse=True)
async def close_roosts() -> AsyncIterator[None]:
    yield
    while BUILT:
        await BUILT.pop().aclose()


async def make_roost(
    monkeypatch: pytest.MonkeyPatch, fake: ScriptedJudge | None, clock: Clock, cap: int = 200
) -> tuple[Roost, MemoryAudit]:
    if fake is not None:
        monkeypatch.setenv("ROOST_LLM__BASE_URL", fake.base_url)
        monkeypatch.setenv("ROOST_LLM__API_KEY", KEY)
        monkeypatch.setenv("ROOST_LLM__MODEL", "m1")
        monkeypatch.setenv("ROOST_LLM__MAX_RETRIES", "0")
    monkeypatch.setenv("ROOST_GRADING__JUDGE_DAILY_CAP", str(cap))
    audit = MemoryAudit()
    roost = await build(load_settings(), audit=audit, clock=clock)
    BUILT.append(roost)
    (roost.tenant_dirs("local").skills / "hidden_files.md").write_text(SKILL)
    return roost, audit


class Chat:
    def __init__(self, roost: Roost, chat: str) -> None:
        self.roost, self.chat, self.n = roost, chat, 0

    async def say(self, text: str) -> str:
        self.n += 1
        inbound = Inbound("web", "local", self.chat, text, f"{self.chat}-{self.n}")
        return (await self.roost.core.handle(inbound)).text


def events(audit: MemoryAudit, name: str) -> list[dict[str, object]]:
    return [d for e, _t, d in audit.events if e == name]


async def test_a_late_rephrase_reaches_skill_grades_and_the_learner(
    home: Path, clock: Clock, fake: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    roost, audit = await make_roost(monkeypatch, fake, clock)
    fake.labels[AGAIN] = "rephrase"
    chat = Chat(roost, "c1")
    assert await chat.say(ASK) == REPLY
    grades = SkillGrades(roost.database)
    assert (await grades.get("local", "hidden_files")).grade == 1300  # used: +0.3
    await chat.say(AGAIN)
    await roost.judge.drain()

    g = await grades.get("local", "hidden_files")
    assert g.counts["rephrase"] == 1 and g.counts["neutral"] == 0
    assert g.grade == 1000  # +0.3 used, then -0.3 for the rephrase (neutral was 0)
    [judged] = events(audit, "outcome.judged")
    assert judged == {
        "label": "rephrase",
        "prev_run_id": "c1-1",
        "msg_id": "c1-2",
        "channel": "web",
        "cached": False,
    }
    assert set(judged) == set(EVENTS["outcome.judged"])
    graded = events(audit, "skill.outcome_graded")
    assert [d["signal"] for d in graded] == ["neutral", "rephrase"]
    records = [
        {"event": e, "tenant": t, "ts": i, "details": d} for i, (e, t, d) in enumerate(audit.events)
    ]
    [turn] = graded_turns(records)  # what the style learner reads: the last grade of the turn
    assert (turn.msg_id, turn.signal, turn.skills) == ("c1-1", "rephrase", ("hidden_files",))


async def test_the_judge_is_asked_only_after_the_reply_went_out(
    home: Path, clock: Clock, fake: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    roost, audit = await make_roost(monkeypatch, fake, clock)
    fake.labels[AGAIN] = "rephrase"
    chat = Chat(roost, "c1")
    await chat.say(ASK)
    fake.hold_chat.add(AGAIN)  # the reply to the follow-up is held at the server
    replying = asyncio.create_task(chat.say(AGAIN))
    await until(lambda: fake.chat_waiting, "the reply held at the server")
    assert roost.judge.queued() == (1, 0)  # held for the judge, not yet asked
    assert fake.arrivals == ["chat", "chat"]
    fake.chat_gate.set()
    assert await replying == "ok"

    fake.gate.clear()  # now the judge is asked, and waits: the reply is already out
    await until(lambda: fake.waiting, "the judge request waiting at the gate")
    assert fake.arrivals == ["chat", "chat", "judge"]
    assert events(audit, "outcome.judged") == []
    fake.gate.set()
    await roost.judge.drain()
    assert len(events(audit, "outcome.judged")) == 1


async def test_follow_ups_that_queue_up_go_in_one_request_and_same_inputs_are_cached(
    home: Path, clock: Clock, fake: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    roost, audit = await make_roost(monkeypatch, fake, clock)
    follow_ups = ["which terminal command reveals dotfiles", "list dot files how", AGAIN]
    for text in follow_ups:
        fake.labels[text] = "rephrase"
    fake.gate.clear()
    first = Chat(roost, "a")
    await first.say(ASK)
    await first.say(follow_ups[0])  # its judge request waits at the gate
    await until(lambda: fake.waiting, "the judge request waiting at the gate")
    for name, text in zip("bc", follow_ups[1:], strict=True):
        chat = Chat(roost, name)
        await chat.say(ASK)
        await chat.say(text)  # queued behind the request in flight
    fake.gate.set()
    await roost.judge.drain()
    assert [items_of(b) for b in fake.judge_requests] == [follow_ups[:1], follow_ups[1:]]

    again = Chat(roost, "d")  # the same request, answer and follow-up as chat c
    await again.say(ASK)
    await again.say(AGAIN)
    await roost.judge.drain()
    assert len(fake.judge_requests) == 2  # answered from the cache
    judged = events(audit, "outcome.judged")
    assert [d["cached"] for d in judged] == [False, False, False, True]
    assert all(d["label"] == "rephrase" for d in judged)


async def test_the_daily_cap_counts_follow_ups_per_tenant_and_day(
    home: Path, clock: Clock, fake: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    roost, _audit = await make_roost(monkeypatch, fake, clock, cap=2)
    texts = ["list dotfiles please", "which command shows dot files", AGAIN]
    for name, text in zip("abc", texts, strict=True):
        chat = Chat(roost, name)
        await chat.say(ASK)
        await chat.say(text)
        await roost.judge.drain()
    assert [items_of(b) for b in fake.judge_requests] == [texts[:1], texts[1:2]]
    usage = JudgeUsage(roost.database)
    today = await usage.day("local", utc_day(clock()))
    assert (today.asked, today.capped) == (2, 1)

    clock.advance(86400)  # a new UTC day: the cap starts again
    chat = Chat(roost, "d")
    await chat.say(ASK)
    await chat.say("show me the dotfiles command")
    await roost.judge.drain()
    assert len(fake.judge_requests) == 3
    assert (await usage.day("local", utc_day(clock()))).asked == 1
    # the judge's calls count in the usage table, under the judge's model name
    row = await roost.database.fetch_one(
        "SELECT SUM(turns), SUM(prompt_tokens) FROM token_usage WHERE tenant='local'"
    )
    assert row == (8 + 3, 8 * 10 + 3 * 50)  # eight chat turns and three judge requests


@pytest.mark.parametrize(
    "raw",
    [
        "Sure! I think this is a rephrase.",
        "1: rephrase, probably",
        "2: rephrase",
        "1: rephrase\n1: rejection",
        "REPHRASE OR NEUTRAL",
        "",
    ],
)
async def test_anything_but_one_known_label_is_ignored_and_counted(
    raw: str,
    home: Path,
    clock: Clock,
    fake: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    roost, audit = await make_roost(monkeypatch, fake, clock)
    fake.raw = raw
    chat = Chat(roost, "c1")
    await chat.say(ASK)
    await chat.say(AGAIN)
    await roost.judge.drain()
    assert len(fake.judge_requests) == 1
    assert events(audit, "outcome.judged") == []
    assert (await SkillGrades(roost.database).get("local", "hidden_files")).counts["neutral"] == 1
    assert (await JudgeUsage(roost.database).day("local", utc_day(clock()))).ignored >= 1


async def test_a_bare_label_is_accepted_for_one_item(
    home: Path, clock: Clock, fake: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    roost, audit = await make_roost(monkeypatch, fake, clock)
    fake.raw = "Rephrase."
    chat = Chat(roost, "c1")
    await chat.say(ASK)
    await chat.say(AGAIN)
    await roost.judge.drain()
    assert [d["label"] for d in events(audit, "outcome.judged")] == ["rephrase"]


async def test_reactions_and_lexical_labels_are_not_sent_to_the_judge(
    home: Path, clock: Clock, fake: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    roost, _audit = await make_roost(monkeypatch, fake, clock)
    for name, text in zip("abc", ["thanks, perfect", "that's wrong", "I'm free lol"], strict=True):
        chat = Chat(roost, name)
        await chat.say(ASK)
        await chat.say(text)
    await roost.judge.drain()
    assert fake.judge_requests == []


async def test_vault_values_never_reach_the_judge(
    home: Path, clock: Clock, fake: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    roost, _audit = await make_roost(monkeypatch, fake, clock)
    set_value(roost.tenant_dirs("local"), "token", "tok-9f8e7d6c5b4a")
    chat = Chat(roost, "c1")
    await chat.say(ASK)
    await chat.say("how do I log in with tok-9f8e7d6c5b4a on the server")
    await roost.judge.drain()
    [request] = fake.judge_requests
    assert "tok-9f8e7d6c5b4a" not in str(request)
    assert "how do I log in with" in str(request)


async def test_with_no_model_configured_the_judge_is_off_and_says_so_once(
    home: Path,
    clock: Clock,
    fake: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The judge's model is the offline backend (the turns run on a model: with no model
    at all no turn is stored, so there is nothing to grade: test_no_model_grades_nothing)."""
    monkeypatch.setenv("ROOST_MODELS__OFF__PROVIDER", "offline")
    monkeypatch.setenv("ROOST_GRADING__JUDGE_MODEL", "off")
    roost, audit = await make_roost(monkeypatch, fake, clock)
    assert roost.judge.status().startswith("off (no model configured")
    caplog.set_level(logging.INFO, logger="bridge.grading.judge")
    for name in "ab":
        chat = Chat(roost, name)
        await chat.say(ASK)
        await chat.say(AGAIN)
        await roost.judge.drain()
    off = [r for r in caplog.records if "judge off" in r.getMessage()]
    assert len(off) == 1
    assert events(audit, "outcome.judged") == []
    assert (await JudgeUsage(roost.database).day("local", utc_day(clock()))).asked == 0
    assert len(fake.requests) == 4  # the turns only


async def test_no_model_grades_nothing(
    home: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no model configured the offline answer is never stored (s35 N8): the next
    message grades no turn and hands the judge nothing."""
    roost, audit = await make_roost(monkeypatch, None, clock)  # the offline backend
    assert roost.judge.status().startswith("off (no model configured")
    chat = Chat(roost, "a")
    await chat.say(ASK)
    await chat.say(AGAIN)
    assert roost.judge.queued() == (0, 0)
    assert events(audit, "outcome.graded") == [] and events(audit, "outcome.judged") == []


async def test_a_follow_up_answered_without_storing_is_still_judged(
    home: Path, clock: Clock, fake: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The person's message is answered by the offline model (never stored, as a failed
    turn is not): it still says how the previous, stored answer landed, so the judge is
    asked (it was held for good: session 36's attacker F4)."""
    monkeypatch.setenv("ROOST_MODELS__OFF__PROVIDER", "offline")
    roost, audit = await make_roost(monkeypatch, fake, clock)
    fake.labels[AGAIN] = "rephrase"
    chat = Chat(roost, "c1")
    assert await chat.say(ASK) == REPLY
    assert "off" in await chat.say("/model off")
    assert 'set to `provider = "offline"`' in await chat.say(AGAIN)
    await roost.judge.drain()
    assert roost.judge.queued() == (0, 0)
    [judged] = events(audit, "outcome.judged")
    said = (judged["label"], judged["prev_run_id"], judged["msg_id"])
    assert said == ("rephrase", "c1-1", "c1-3")


async def test_a_reload_changes_the_cap_live(
    home: Path, clock: Clock, fake: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bridge.app.live import reload_hooks

    roost, _audit = await make_roost(monkeypatch, fake, clock, cap=0)
    assert roost.judge.status().startswith("off ([grading] judge_daily_cap = 0)")
    new = roost.settings.model_copy(
        update={"grading": roost.settings.grading.model_copy(update={"judge_daily_cap": 5})}
    )
    for hook in reload_hooks(roost):
        if "grading" in hook.live:
            hook.apply(new)
    assert roost.judge.status() == "on (model default)"
    chat = Chat(roost, "c1")
    await chat.say(ASK)
    await chat.say(AGAIN)
    await roost.judge.drain()
    assert len(fake.judge_requests) == 1
