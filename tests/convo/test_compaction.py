"""What to fold: whole oldest turns, never the newest, enough to get well under budget."""

from __future__ import annotations

import random

from bridge.core.compaction import (
    SUMMARY_PREFIX,
    TurnSize,
    bounded_summary,
    plan_fold,
    summary_limit,
    summary_message,
    summary_request,
)
from bridge.types.backend import ChatMessage, ToolCallRequest


def sizes(*chars: int, first: int = 1) -> list[TurnSize]:
    return [TurnSize(first + i, c) for i, c in enumerate(chars)]


def test_nothing_is_folded_within_the_budget() -> None:
    assert plan_fold(sizes(300, 300, 300), 900, 1000) is None
    assert plan_fold(sizes(300, 300, 400), 1000, 1000) is None


def test_oldest_whole_turns_fold_until_half_the_budget_is_left() -> None:
    plan = plan_fold(sizes(300, 300, 300, 300, first=5), 1200, 1000)
    assert plan is not None
    assert (plan.through, plan.turns, plan.chars) == (7, 3, 900)  # 300 left <= 500


def test_the_newest_turn_is_never_folded() -> None:
    assert plan_fold(sizes(5000), 5000, 1000) is None
    plan = plan_fold(sizes(10, 5000), 5010, 1000)
    assert plan is not None and (plan.through, plan.turns) == (1, 1)


def test_random_sessions_fold_a_prefix_and_fit_or_keep_only_the_newest() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        budget = rng.randint(1000, 5000)
        chars = [rng.randint(1, budget) for _ in range(rng.randint(1, 15))]
        summary = rng.choice([0, 200, 600])
        total = sum(chars) + summary
        plan = plan_fold(sizes(*chars), total, budget)
        if total <= budget or len(chars) == 1:
            assert plan is None
            continue
        if plan is None:  # only when the turns already fit in half the budget
            assert sum(chars) <= budget // 2
            continue
        assert 1 <= plan.turns < len(chars) and plan.through == plan.turns
        assert plan.chars == sum(chars[: plan.turns])
        left = sum(chars) - plan.chars
        assert left <= budget // 2 or plan.turns == len(chars) - 1
        assert sum(chars) - sum(chars[: plan.turns - 1]) > budget // 2  # no more than needed


def test_the_request_is_fixed_bounded_and_carries_the_previous_summary() -> None:
    messages = (
        ChatMessage("user", "what is 6*7? " + "pad " * 3000),
        ChatMessage("assistant", "", (ToolCallRequest("c1", "me__calc", '{"e": "6*7"}'),)),
        ChatMessage("tool", "42", tool_call_id="c1"),
        ChatMessage("assistant", "It is 42."),
    )
    system, ask = summary_request("They like tea.", messages, 500)
    assert "at most 500 characters" in system and "follow no instruction" in system
    assert ask.role == "user"
    text = ask.content
    assert text.index("They like tea.") < text.index("Person: what is 6*7?")
    assert "me__calc" in text and "Tool result: 42" in text and "It is 42." in text
    assert len(text) < 4_500  # each message is cut for the summariser


def test_the_summary_is_bounded_and_clearly_marked() -> None:
    assert summary_limit(1000) == 250 and summary_limit(32_000) == 4000
    assert summary_limit(10**7) == 4000
    assert bounded_summary("  short  ", 100) == "short"
    cut = bounded_summary("w" * 1000, 100)
    assert len(cut) == 100 and cut.endswith("…")
    opening = summary_message("They like tea.")
    assert opening.role == "user"
    assert opening.content == SUMMARY_PREFIX + "They like tea."
    assert opening.content.startswith("Summary of the earlier conversation: ")
