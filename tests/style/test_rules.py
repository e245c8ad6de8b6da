"""Pure decisions: the gate, the A/B promotion, rollback, cohorts, score, text."""

from __future__ import annotations

from bridge.audit.redact import redact
from bridge.style.aggregate import cohorts, graded_turns, skill_counts
from bridge.style.judge import parse_verdict
from bridge.style.rules import (
    DAY_MS,
    Counts,
    Thresholds,
    ab_decision,
    bullet_text,
    cohort_bit,
    improves,
    is_candidate,
    score_milli,
    should_roll_back,
)
from tests.style.helpers import T0, graded, signals

T = Thresholds()


def test_gate_needs_five_signals() -> None:
    assert not is_candidate(Counts(4, 4), T)
    assert is_candidate(Counts(5, 4), T)  # 80 %
    assert not is_candidate(Counts(5, 3), T)  # 60 %


def test_gate_seventy_percent_edge() -> None:
    assert is_candidate(Counts(10, 7), T)  # exactly 70 %
    assert not is_candidate(Counts(100, 69), T)  # 69 %
    assert is_candidate(Counts(100, 70), T)
    assert not is_candidate(Counts(1000, 699), T)  # 69.9 %


def test_gate_from_records_at_the_edges() -> None:
    four = graded_turns(signals("a", "deploy", 4, 0, T0))
    five = graded_turns(signals("a", "deploy", 5, 0, T0))
    assert not is_candidate(skill_counts(four, 0, T0 + DAY_MS)[("a", "deploy")], T)
    assert is_candidate(skill_counts(five, 0, T0 + DAY_MS)[("a", "deploy")], T)
    c69 = skill_counts(graded_turns(signals("a", "s", 69, 31, T0)), 0, T0 + DAY_MS)
    c70 = skill_counts(graded_turns(signals("a", "s", 70, 30, T0)), 0, T0 + DAY_MS)
    assert not is_candidate(c69[("a", "s")], T)
    assert is_candidate(c70[("a", "s")], T)


def test_neutral_is_not_a_signal_and_the_window_is_respected() -> None:
    recs = [graded("a", T0 + i, "neutral", ["s"], f"n{i}") for i in range(9)]
    recs += signals("a", "s", 5, 0, T0 - 20 * DAY_MS, tag="old")
    counts = skill_counts(graded_turns(recs), T0 - 14 * DAY_MS, T0 + DAY_MS)
    assert counts.get(("a", "s"), Counts()) == Counts(0, 0)


def test_integer_promotion_edge() -> None:
    # 0.55 with vs 0.60 without: exactly 5 points better -> promotes (floats lose this)
    assert 0.60 - 0.55 < 0.05  # the float trap itself
    assert improves(Counts(20, 11), Counts(20, 12), 5)
    assert improves(Counts(100, 55), Counts(100, 60), 5)
    assert not improves(Counts(100, 56), Counts(100, 60), 5)
    assert improves(Counts(7, 1), Counts(9, 8), 5)


def test_ab_decision_waits_extends_and_decides() -> None:
    good, bad = Counts(10, 2), Counts(10, 8)
    assert ab_decision(good, bad, 3 * DAY_MS - 1, T)[0] == "wait"
    assert ab_decision(good, bad, 3 * DAY_MS, T)[0] == "promote"
    assert ab_decision(bad, good, 3 * DAY_MS, T)[0] == "reject"
    thin = Counts(4, 0)
    assert ab_decision(thin, bad, 3 * DAY_MS, T)[0] == "wait"
    assert ab_decision(thin, bad, 14 * DAY_MS, T) == ("reject", "a/b inconclusive")
    assert ab_decision(Counts(5, 0), Counts(5, 5), 3 * DAY_MS, T)[0] == "promote"


def test_rollback_edge() -> None:
    assert not should_roll_back(Counts(4, 4), T)
    assert not should_roll_back(Counts(20, 11), T)  # exactly 55 %: not more
    assert should_roll_back(Counts(20, 12), T)


def test_per_bullet_cohorts_are_independent() -> None:
    ids = [f"msg-{i}" for i in range(2000)]
    a = [cohort_bit(m, "b-0001") for m in ids]
    b = [cohort_bit(m, "b-0002") for m in ids]
    agree = sum(x == y for x, y in zip(a, b, strict=True))
    assert 850 < sum(a) < 1150 and 850 < sum(b) < 1150
    assert 850 < agree < 1150  # about half: independent, not one shared bit
    both = sum(x and y for x, y in zip(a, b, strict=True))
    assert 400 < both < 600


def test_cohorts_recomputed_from_prev_run_id() -> None:
    recs = [graded("a", T0 + i, "rejection", ["s"], f"x{i}") for i in range(50)]
    with_, without = cohorts(graded_turns(recs), "a", "s", "b-0009", T0, T0 + DAY_MS)
    expected = sum(cohort_bit(f"x{i}", "b-0009") for i in range(50))
    assert with_.total == expected and without.total == 50 - expected


def test_turn_time_comes_from_message_received() -> None:
    recv = {
        "event": "message.received",
        "tenant": "a",
        "ts": T0 - 5 * DAY_MS,
        "details": {"msg_id": "old1"},
    }
    turns = graded_turns([recv, graded("a", T0, "rejection", ["s"], "old1")])
    assert turns[0].turn_ms == T0 - 5 * DAY_MS and turns[0].graded_ms == T0


def test_score_prefers_live_rate_once_known() -> None:
    assert score_milli(600, 300, Counts(2, 2), T) == 300
    assert score_milli(600, 300, Counts(10, 5), T) == 100


def test_bullet_text_is_flag_shaped_and_redaction_drops_it() -> None:
    text = bullet_text("deploy", Counts(8, 8))
    assert text.startswith("When applying skill deploy, double-check")
    assert "100% corrections" in text and "(n=8)" in text
    assert "_dropped" in redact({"x": text})  # prose never survives the writer


def test_parse_verdict() -> None:
    assert parse_verdict("FAITHFUL") == "faithful"
    assert parse_verdict("Verdict: overfit.") == "overfit"
    assert parse_verdict("faithful or overfit? OVERFIT and FAITHFUL") == "error"
    assert parse_verdict("I cannot tell") == "error"
    assert parse_verdict("UNFAITHFUL") == "error"
