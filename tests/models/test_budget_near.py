"""/status and /usage warn when a token budget is nearly used up (80 % or more).

The fake OpenAI server reports the usage of each turn; the warning appears
at 80 % of a budget, says "used up" once it is, names the figures, and
concerns only the tenant whose budget it is.
"""

from __future__ import annotations

from bridge.core.budgets import Budget, near_note
from tests.fakes.fake_openai import FakeOpenAI, Text
from tests.models.conftest import ALICE, BOB, Make, models_toml, telegram

BUDGETS = f"telegram_ids = [{ALICE}]\ndaily_tokens = 1000\nmonthly_tokens = 100000\n"


async def test_status_and_usage_warn_from_eighty_percent(make: Make, first: FakeOpenAI) -> None:
    roost = await make(models_toml(first, None).replace(f"telegram_ids = [{ALICE}]\n", BUDGETS))
    alice, bob = telegram(roost, ALICE), telegram(roost, BOB)
    first.script(
        Text("one", usage=(700, 99)),  # 799: 79 %
        Text("two", usage=(1, 0)),  # 800: 80 %
        Text("three", usage=(300, 0)),  # 1,100: over
        Text("bob's", usage=(5000, 0)),
    )
    await alice.say("first")
    assert "⚠" not in (await alice.say("/status")).text
    assert "⚠" not in (await alice.say("/usage")).text

    await alice.say("second")
    near = "⚠ Your daily token budget is nearly used up: 800 of 1,000 tokens (80%) today (UTC)."
    status = (await alice.say("/status")).text
    assert status.endswith(near)
    usage = (await alice.say("/usage")).text
    assert usage.endswith("(in + out tokens).\n" + near)
    assert "monthly" not in status  # 800 of 100,000 is far from it

    await alice.say("third")
    over = "⚠ Your daily token budget is used up: 1,100 of 1,000 tokens (110%) today (UTC)."
    assert (await alice.say("/status")).text.endswith(over)

    await bob.say("bob asks")  # bob has no budget: never warned, however much he uses
    assert "⚠" not in (await bob.say("/status")).text + (await bob.say("/usage")).text


def test_near_note_is_pure_and_names_each_budget() -> None:
    assert near_note(Budget(), 10**9, 10**9) == ""
    assert near_note(Budget(daily=100), 79, 0) == ""
    both = near_note(Budget(daily=100, monthly=1000), 80, 999)
    assert both.splitlines() == [
        "⚠ Your daily token budget is nearly used up: 80 of 100 tokens (80%) today (UTC).",
        "⚠ Your monthly token budget is nearly used up: 999 of 1,000 tokens (99%) "
        "this month (UTC).",
    ]
