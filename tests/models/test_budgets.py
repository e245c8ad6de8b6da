"""Token budgets: a turn over budget is refused before any model is asked.

The fake OpenAI server reports usage as api.openai.com does; the clock is
injected, so "the next day" and "the next month" are a clock step away.
`budget.reached` is audited once per tenant per period, across restarts too.
The style judge's calls count against the same budgets.
"""

from __future__ import annotations

from pathlib import Path

from bridge.app.build import Roost
from bridge.app.database import open_database
from bridge.core.budgets import UsageMeter, budgets_of
from bridge.core.config import load_settings
from bridge.core.db import connect
from bridge.core.usage import UsageStore
from bridge.llm.openai import OpenAIBackend
from bridge.style.judge import Judge
from tests.conftest import Clock
from tests.fakes.fake_openai import FakeOpenAI, Text
from tests.models.conftest import (
    ALICE,
    BOB,
    KEY_B,
    Make,
    models_toml,
    telegram,
    web,
    write_config,
)

DAY = 86_400


def reached(roost: Roost) -> list[tuple[str | None, dict[str, object]]]:
    events = roost.audit.events  # type: ignore[attr-defined]
    return [(t, d) for e, t, d in events if e == "budget.reached"]


async def test_a_used_up_daily_budget_refuses_until_the_next_utc_day(
    make: Make, clock: Clock, first: FakeOpenAI
) -> None:
    roost = await make(
        models_toml(first, None).replace(
            f"telegram_ids = [{ALICE}]\n", f"telegram_ids = [{ALICE}]\ndaily_tokens = 1000\n"
        )
    )
    alice = telegram(roost, ALICE)
    first.script(Text("a long answer", usage=(900, 150)))
    assert (await alice.say("first")).text == "a long answer"
    for text in ("second", "third", "fourth"):
        refused = await alice.say(text)
        assert refused.kind == "refusal"
    assert refused.text.startswith(
        "Your daily token budget is used up: 1,050 of 1,000 tokens today (UTC). "
        "It resets at 2027-01-16 00:00 UTC (in 16 h 0 min). No model was asked."
    )
    assert len(first.requests) == 1  # nothing reached the model server
    assert reached(roost) == [
        ("alice", {"budget": "daily", "used": 1050, "limit": 1000, "period": "2027-01-15"})
    ]
    assert "Budgets: daily 1,050/1,000 (105%)" in (await alice.say("/usage")).text
    assert (await web(roost).say("local has no budget")).kind == "answer"  # per tenant
    assert (await telegram(roost, BOB).say("nor has bob")).kind == "answer"
    clock.advance(16 * 3600)
    assert (await alice.say("a new day")).text == "echo: a new day"
    assert len(first.requests) == 4


async def test_a_monthly_default_with_a_tenant_exempt(
    make: Make, clock: Clock, first: FakeOpenAI
) -> None:
    toml = models_toml(first, None, "[limits]\nmonthly_tokens = 500\n").replace(
        f"telegram_ids = [{BOB}]\n", f"telegram_ids = [{BOB}]\nmonthly_tokens = 0\n"
    )
    roost = await make(toml)
    first.script(Text("x", usage=(400, 100)), Text("y", usage=(400, 100)))
    alice, bob = telegram(roost, ALICE), telegram(roost, BOB)
    await alice.say("spend")
    await bob.say("spend")
    assert (await bob.say("bob is exempt")).kind == "answer"
    refused = await alice.say("more")
    assert refused.text.startswith(
        "Your monthly token budget is used up: 500 of 500 tokens this month (2027-01, UTC). "
        "It resets at 2027-02-01 00:00 UTC (in 16 d 16 h)."
    )
    clock.advance(17 * DAY)  # 2027-02-01 08:00 UTC
    first.script(Text("z", usage=(450, 50)))
    assert (await alice.say("february")).kind == "answer"
    assert (await alice.say("over again")).kind == "refusal"
    periods = [d["period"] for _, d in reached(roost)]
    assert periods == ["2027-01", "2027-02"]  # once per period


async def test_a_restart_does_not_audit_the_same_period_again(
    make: Make, first: FakeOpenAI
) -> None:
    toml = models_toml(first, None, "[limits]\ndaily_tokens = 10\n")
    before = await make(toml)
    await web(before).say("spend")
    await web(before).say("refused")
    await before.aclose()
    after = await make(toml)
    assert (await web(after).say("still refused")).kind == "refusal"
    assert len(reached(before)) == 1 and reached(after) == []
    assert len(first.requests) == 1


async def test_the_style_judge_counts_and_is_held_by_the_budget(
    home: Path, clock: Clock, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    write_config(
        models_toml(first, second, '[style]\njudge_model = "smart"\n').replace(
            f"telegram_ids = [{ALICE}]\n", f"telegram_ids = [{ALICE}]\ndaily_tokens = 300\n"
        )
    )
    settings = load_settings()
    db = connect(home / "roost.db")
    database = await open_database(home / "roost.db")
    meter = UsageMeter(UsageStore(database), budgets_of(settings), clock)
    backend = OpenAIBackend(second.base_url, KEY_B, "big-2")
    judge = Judge(backend, meter=meter, model=settings.style.judge_model or "")
    try:
        second.script(Text("FAITHFUL", usage=(250, 60, 128)))
        assert (await judge.judge("rule?", "alice")).verdict == "faithful"
        held = await judge.judge("rule?", "alice")
        assert (held.verdict, held.error_kind) == ("error", "budget")
        assert len(second.requests) == 1 and not first.requests
        await judge.judge("rule?", "bob")  # bob has no budget: asked
        assert len(second.requests) == 2
        found = db.execute(
            "SELECT tenant, model, prompt_tokens, completion_tokens, cached_tokens "
            "FROM token_usage ORDER BY tenant"
        ).fetchall()
        assert found[0] == ("alice", "smart", 250, 60, 128)
    finally:
        await backend.aclose()
        await database.aclose()
        db.close()
