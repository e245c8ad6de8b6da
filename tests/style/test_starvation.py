"""The learner never starves its own experiment (issue 17).

Through the real turn path (the OpenAI backend against the fake server, real
SQLite, the real audit chain file): a skill keeps drawing corrections, its
grade falls to 0 so it is no longer offered, the sweep turns the corrections
into a shadow bullet, and the person keeps asking about that skill. Every
such turn could be affected by the bullet (block 8 shows it on its cohort's
turns whether or not block 7 offers the skill), so the A/B must keep
receiving signals and be decided, never end inconclusive for want of turns.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.app.home import chain_path
from bridge.core.config import load_settings
from bridge.core.filecache import FileCache
from bridge.skills.grades import SkillGrades
from bridge.skills.view import GradedSkills
from bridge.style.judge import Judge
from bridge.style.rules import DAY_MS
from bridge.style.store import StyleStore
from bridge.style.sweep import Sweeper
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from tests.conftest import Clock
from tests.fakes.fake_openai import FakeOpenAI, Text
from tests.style.helpers import FakeJudge

API_KEY = "sk-test-key-000000000000"
SKILL = (
    "---\nname: deploy\ndescription: Ship a release of a service to staging or production\n"
    "when: the person asks to deploy something\n---\n"
    "1. run the tests\n2. tag the release\n3. push the tag; the pipeline deploys it\n"
)
ANSWER = "To deploy it, tag the release and push the tag; the pipeline does the rest."
# the grade falls: each follow-up rejects the last answer and asks about deploying again
CORRECTIONS = [
    "How do I deploy the api service to staging?",
    "No, that's wrong. How do I deploy the worker service instead?",
    "That's not what I asked, deploy it to production, not staging.",
    "Wrong again, the deploy needs the database migration first.",
    "No, that didn't work: the deploy failed with a timeout.",
    "Nein, das stimmt nicht, das Deploy läuft über den Release-Branch.",
]
# during the A/B: reactions of both kinds, every one of them a request about deploying
DURING = [
    "Thanks, that worked! Now deploy the frontend as well.",
    "No, that's wrong, the deploy of the frontend uses a different pipeline.",
    "Perfect, thank you. Can you deploy the docs site next?",
    "That's not right, the docs deploy goes through the static bucket.",
    "Great, that worked. How do I deploy a hotfix on a Friday?",
    "No, wrong, a hotfix deploy must skip the staging step.",
    "Danke, hat geklappt! Wie deploye ich den Scheduler?",
    "Falsch, der Scheduler wird mit dem Cron-Job deployt, nicht mit der Pipeline.",
    "Thanks, works now. Deploy the metrics exporter too please.",
    "No, that's incorrect: the exporter deploy needs a config map.",
    "Super, danke! Und wie deploye ich die Datenbank-Migration?",
    "Stimmt nicht, die Migration wird vor dem Deploy ausgeführt.",
    "Thank you, that did it. How do I deploy to the eu region?",
    "That's wrong, the eu deploy has its own cluster.",
    "Great, thanks. What about a canary deploy?",
    "No, that is not how a canary deploy works here.",
    "Thanks! Last one: deploy the admin panel.",
]


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(
        api_key=API_KEY, models=["m1"], responder=lambda body: Text(ANSWER)
    ) as server:
        yield server


@pytest.fixture
async def wired(
    home: Path, fake: FakeOpenAI, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Roost]:
    monkeypatch.setenv("ROOST_LLM__BASE_URL", fake.base_url)
    monkeypatch.setenv("ROOST_LLM__API_KEY", API_KEY)
    monkeypatch.setenv("ROOST_LLM__MODEL", "m1")
    monkeypatch.setenv("ROOST_LLM__MAX_RETRIES", "0")
    made = await build(load_settings(), clock=clock)
    yield made
    await made.aclose()


async def _say(roost: Roost, clock: Clock, texts: list[str], start: int) -> None:
    for i, text in enumerate(texts):
        clock.advance(60)
        inbound = Inbound("web", "local", "c1", text, f"{start + i:032x}")
        final = await roost.core.handle(inbound, None)
        assert final.kind == "answer", final.text


async def test_a_skill_graded_to_zero_keeps_feeding_its_shadow_ab(
    wired: Roost, fake: FakeOpenAI, clock: Clock, home: Path
) -> None:
    dirs = wired.tenant_dirs("local").ensure()
    (dirs.skills / "deploy.md").write_text(SKILL)
    await _say(wired, clock, CORRECTIONS, 1)
    grades = SkillGrades(wired.database)
    assert (await grades.get("local", "deploy")).grade <= 0  # five rejections in a row
    listed = (await wired.core.handle(Inbound("web", "local", "c2", "/skills", "s1"), None)).text
    assert "deploy: grade +0.0 (not offered)" in listed

    store = StyleStore(wired.database)
    sweeper = Sweeper(store, Judge(FakeJudge("FAITHFUL")), MemoryAudit())
    chain = chain_path(home)
    clock.advance(60)
    await sweeper.sweep_chain(chain, int(clock() * 1000))
    [bullet] = await store.tenant("local")
    assert (bullet.skill, bullet.state) == ("deploy", "shadow")
    started_ms = int(clock() * 1000)

    clock.advance(3600)
    await _say(wired, clock, DURING, 100)
    assert "deploy" not in await offered(wired)  # still not offered
    await sweeper.sweep_chain(chain, started_ms + DAY_MS)
    [bullet] = await store.tenant("local")
    # every turn of the A/B but the last (not graded yet) reached a cohort
    assert bullet.with_n + bullet.without_n == len(DURING) - 1
    assert min(bullet.with_n, bullet.without_n) >= 5

    await sweeper.sweep_chain(chain, started_ms + 3 * DAY_MS + 1)
    [bullet] = await store.tenant("local")
    assert bullet.outcome != "ab_inconclusive"
    assert bullet.state in ("live", "rejected")


async def offered(roost: Roost) -> list[str]:
    grades = SkillGrades(roost.database)
    await grades.all("local")  # what a turn's `prepare` reads before the prompt
    view = GradedSkills(grades, FileCache())
    return [row.name for row in view.active(roost.tenant_dirs("local"))]
