"""Thresholds and the pure decisions of the learner: integers only, no clock.

Every ratio test is a cross-multiplication of integer counts, so an edge such
as "exactly 70 % negative" or "exactly 5 points better" is decided exactly
(the primary design's float `>=` lost 0.60 - 0.55 >= 0.05).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bridge.prompt.views import shadow_cohort

DAY_MS = 86_400_000
SKILL_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
NEGATIVE = frozenset({"rejection", "rephrase"})
SIGNALS = frozenset({"approval", "rejection", "rephrase"})  # neutral is no signal


@dataclass(frozen=True, slots=True)
class Thresholds:
    window_days: int = 14  # aggregation window for candidates
    min_signals: int = 5  # a candidate needs at least this many signals ...
    negative_pct: int = 70  # ... of which at least this share is negative
    cooldown_days: int = 30  # after overfit, failed A/B, rollback, cap eviction
    shadow_days: int = 3  # the A/B runs this long ...
    shadow_max_days: int = 14  # ... and is extended up to this while a cohort is thin
    min_cohort: int = 5  # graded turns needed in each cohort to decide the A/B
    improvement_pts: int = 5  # with-bullet must be at least this many points better
    live_days: int = 7  # live evaluation window
    live_min_signals: int = 5
    rollback_pct: int = 55  # live: more than this share negative -> roll back
    live_cap: int = 10


@dataclass(frozen=True, slots=True)
class Counts:
    """Signals of one skill (or one cohort): how many, how many negative."""

    total: int = 0
    negative: int = 0

    def add(self, signal: str) -> Counts:
        if signal not in SIGNALS:
            return self
        return Counts(self.total + 1, self.negative + (signal in NEGATIVE))

    @property
    def pct(self) -> int:
        """Negative share in whole percent, rounded down (0 without signals)."""
        return self.negative * 100 // self.total if self.total else 0

    @property
    def milli(self) -> int:
        return self.negative * 1000 // self.total if self.total else 0


def is_candidate(c: Counts, t: Thresholds) -> bool:
    """At least `min_signals` signals, at least `negative_pct` % of them negative."""
    return c.total >= t.min_signals and c.negative * 100 >= t.negative_pct * c.total


Decision = Literal["promote", "reject", "wait"]


def improves(with_: Counts, without: Counts, points: int) -> bool:
    """with/W <= without/O - points/100, in integers: 100*w*O + points*W*O <= 100*o*W.

    An improvement of exactly `points` counts as enough.
    """
    w, big_w, o, big_o = with_.negative, with_.total, without.negative, without.total
    return 100 * w * big_o + points * big_w * big_o <= 100 * o * big_w


def ab_decision(with_: Counts, without: Counts, age_ms: int, t: Thresholds) -> tuple[Decision, str]:
    """What to do with a shadow bullet `age_ms` after its A/B started."""
    if age_ms < t.shadow_days * DAY_MS:
        return "wait", "a/b running"
    if min(with_.total, without.total) < t.min_cohort:
        if age_ms < t.shadow_max_days * DAY_MS:
            return "wait", "a/b extended: a cohort is below the minimum"
        return "reject", "a/b inconclusive"
    if improves(with_, without, t.improvement_pts):
        return "promote", "a/b improved"
    return "reject", "a/b no improvement"


def should_roll_back(c: Counts, t: Thresholds) -> bool:
    """Live: at least `live_min_signals` signals and more than `rollback_pct` % negative."""
    return c.total >= t.live_min_signals and c.negative * 100 > t.rollback_pct * c.total


def score_milli(baseline_milli: int, with_milli: int, live: Counts, t: Thresholds) -> int:
    """How much a live bullet helps, in per-mille points (higher is better).

    The control cohort's negative rate at promotion minus the bullet's current
    negative rate: its live rate once it has `live_min_signals` signals, else
    its with-bullet rate from the A/B.
    """
    current = live.milli if live.total >= t.live_min_signals else with_milli
    return baseline_milli - current


def cohort_bit(msg_id: str, bullet_id: str) -> int:
    """The shadow cohort of one bullet on one turn: 1 shows the bullet, 0 is control.

    The same function the loadout uses to decide what block 8 shows
    (`bridge.prompt.views.shadow_cohort`), so a graded turn's cohort is
    recomputed exactly from its message id.
    """
    return 1 if shadow_cohort(msg_id, bullet_id) else 0


def bullet_text(skill: str, c: Counts) -> str:
    """The flag-shaped bullet, generated from the data (never from message text)."""
    return (
        f"When applying skill {skill}, double-check the person's intent before "
        f"committing — recent feedback shows {c.pct}% corrections after this skill "
        f"fires (n={c.total})."
    )


def bullet_id(row_id: int) -> str:
    return f"b-{row_id:04d}"
