"""The model's consolidation proposal is checked before anyone sees it (pure)."""

from __future__ import annotations

import json

import pytest

from bridge.memory.consolidate import PlanError, describe, parse_plan, planned_topics
from bridge.memory.files import Topic

TOPICS = [
    Topic("tea", "user", "likes green tea", "green tea, no sugar", {}),
    Topic("tea time", "user", "drinks tea at four", "tea at 4 pm", {}),
    Topic("old job", "project", "worked at Acme until 2024", "Acme, left in 2024", {}),
]
MERGE = {"from": ["tea", "tea time"], "name": "tea", "type": "user"}
MERGE |= {"description": "green tea at four", "content": "Green tea, no sugar, at 4 pm."}


def plan_text(**raw: object) -> str:
    return "Sure! " + json.dumps(raw) + " Hope that helps."


def test_a_good_plan_shrinks_the_index_and_says_what_changes() -> None:
    plan = parse_plan(plan_text(merge=[MERGE], drop=["old job"]), TOPICS, 6000)
    after = planned_topics(TOPICS, plan, {})
    assert [t.name for t in after] == ["tea"]
    text = describe(TOPICS, plan, 2200)
    assert "• merge 'tea', 'tea time' → 'tea' (user): green tea at four" in text
    assert "• drop 'old job'" in text and "→ [1% — 31/2,200]" in text


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("no json here", "did not answer with a JSON object"),
        (plan_text(merge=[], drop=[]), "proposed no change"),
        (plan_text(merge=[], drop=["unknown"]), "no topic named 'unknown'"),
        (plan_text(merge=[MERGE], drop=["tea"]), "used twice"),
        (plan_text(merge=[MERGE | {"type": "secret"}], drop=[]), "type must be one of"),
        (plan_text(merge=[MERGE | {"from": ["tea"], "name": "old job"}], drop=[]), "taken"),
        (plan_text(merge=[MERGE | {"description": "x" * 140}], drop=[]), "does not make"),
    ],
)
def test_bad_plans_are_refused_with_a_reason(raw: str, why: str) -> None:
    with pytest.raises(PlanError, match=why):
        parse_plan(raw, TOPICS, 6000)
