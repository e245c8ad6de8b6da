"""The UTC day a turn's tokens are counted under (`bridge.core.usage.utc_day`), made
once per day: the same text as the calendar's for any moment, at midnight on either side."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from bridge.core.usage import utc_day


def calendar(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")


def test_every_moment_falls_on_the_calendars_utc_day() -> None:
    rng = random.Random(26)
    for _ in range(20_000):
        t = rng.uniform(0, 4_102_444_800)  # 1970 .. 2100
        assert utc_day(t) == calendar(t)
    for t in (0.0, 86_399.999, 86_400.0, 951_782_400.0, 1_798_761_599.999, 1_798_761_600.0):
        assert utc_day(t) == calendar(t)  # midnights, and 2000-02-29
    assert utc_day(1_798_761_599.999) == "2026-12-31" and utc_day(1_798_761_600.0) == "2027-01-01"
