"""Recurring jobs across the clock changes, Europe/Berlin and America/New_York.

The rule: a wall time skipped in spring runs once at the end of the gap
(03:00); a wall time repeated in autumn runs once, at its first occurrence;
an hourly-or-faster cron (hour field `*`) runs in both passes of the
repeated hour, as Vixie cron does; an interval counts real elapsed time.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bridge.schedule.recur import Every, next_run, parse_every

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def job(text: str, tz: ZoneInfo) -> Every:
    got = parse_every(text, tz)
    assert isinstance(got, Every), got
    return got


def runs_between(every: Every, start: datetime, end: datetime) -> list[str]:
    out, at = [], start
    while (at := next_run(every, at)).astimezone(UTC) < end.astimezone(UTC):
        out.append(at.isoformat())
    return out


@pytest.mark.parametrize(
    ("tz", "text", "day", "expected"),
    [
        # spring forward: 02:30 does not exist; runs once at 03:00
        (BERLIN, "daily 2:30 x", "2026-03-29", ["2026-03-29T03:00:00+02:00"]),
        (NEW_YORK, "daily 2:30 x", "2026-03-08", ["2026-03-08T03:00:00-04:00"]),
        (BERLIN, "30 2 * * * x", "2026-03-29", ["2026-03-29T03:00:00+02:00"]),
        # autumn back: 02:30 (Berlin) / 01:30 (New York) happen twice; run once
        (BERLIN, "daily 2:30 x", "2026-10-25", ["2026-10-25T02:30:00+02:00"]),
        (NEW_YORK, "daily 1:30 x", "2026-11-01", ["2026-11-01T01:30:00-04:00"]),
        (BERLIN, "täglich 2:30 Uhr x", "2026-10-25", ["2026-10-25T02:30:00+02:00"]),
        # a job outside the changed hour keeps its wall-clock time
        (BERLIN, "daily 8:00 x", "2026-03-29", ["2026-03-29T08:00:00+02:00"]),
        (NEW_YORK, "daily 8:00 x", "2026-11-01", ["2026-11-01T08:00:00-05:00"]),
    ],
)
def test_a_daily_job_runs_exactly_once_on_the_change_day(
    tz: ZoneInfo, text: str, day: str, expected: list[str]
) -> None:
    start = datetime.fromisoformat(day).replace(tzinfo=tz)
    end = start + timedelta(days=1)
    assert runs_between(job(text, tz), start, end) == expected


def test_daily_job_returns_to_its_wall_time_the_day_after() -> None:
    every = job("daily 2:30 x", BERLIN)
    got = runs_between(
        every, datetime(2026, 3, 28, 3, tzinfo=BERLIN), datetime(2026, 3, 31, tzinfo=BERLIN)
    )
    assert got == ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]
    got = runs_between(
        every, datetime(2026, 10, 24, 3, tzinfo=BERLIN), datetime(2026, 10, 27, tzinfo=BERLIN)
    )
    assert got == ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]


def test_quarter_hourly_cron_collapses_the_spring_gap_to_one_run() -> None:
    every = job("*/30 * * * * x", BERLIN)
    got = runs_between(
        every, datetime(2026, 3, 29, 1, 15, tzinfo=BERLIN), datetime(2026, 3, 29, 4, tzinfo=BERLIN)
    )
    assert got == [
        "2026-03-29T01:30:00+01:00",
        "2026-03-29T03:00:00+02:00",  # 02:00 and 02:30 never happen: one run at 03:00
        "2026-03-29T03:30:00+02:00",
    ]


@pytest.mark.parametrize(
    ("tz", "start", "expected"),
    [
        (BERLIN, datetime(2026, 10, 25, 0, 30, tzinfo=BERLIN), [
            "2026-10-25T01:00:00+02:00", "2026-10-25T02:00:00+02:00",
            "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00"]),
        (NEW_YORK, datetime(2026, 11, 1, 0, 30, tzinfo=NEW_YORK), [
            "2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00",
            "2026-11-01T02:00:00-05:00", "2026-11-01T03:00:00-05:00"]),
    ],
)  # fmt: skip
def test_hourly_cron_runs_in_both_passes_of_the_repeated_hour(
    tz: ZoneInfo, start: datetime, expected: list[str]
) -> None:
    every = job("0 * * * * x", tz)
    got = [next_run(every, start)]
    for _ in range(3):
        got.append(next_run(every, got[-1]))
    assert [g.isoformat() for g in got] == expected
    gaps = {b.astimezone(UTC) - a.astimezone(UTC) for a, b in itertools.pairwise(got)}
    assert gaps == {timedelta(hours=1)}


@pytest.mark.parametrize(
    ("tz", "start"),
    [
        (BERLIN, datetime(2026, 3, 29, 1, 30, tzinfo=BERLIN)),
        (BERLIN, datetime(2026, 10, 25, 1, 30, tzinfo=BERLIN)),
        (NEW_YORK, datetime(2026, 3, 8, 1, 30, tzinfo=NEW_YORK)),
        (NEW_YORK, datetime(2026, 11, 1, 0, 30, tzinfo=NEW_YORK)),
    ],
)
def test_an_interval_counts_real_elapsed_time_across_the_change(
    tz: ZoneInfo, start: datetime
) -> None:
    every = job("1h x", tz)
    at = start
    for _ in range(4):
        nxt = next_run(every, at)
        assert nxt.astimezone(UTC) - at.astimezone(UTC) == timedelta(hours=1)
        assert str(nxt.tzinfo) == str(tz)
        at = nxt


def test_an_interval_in_the_repeated_hour_is_shown_with_the_right_offset() -> None:
    every = job("1h x", BERLIN)
    first = next_run(every, datetime(2026, 10, 25, 1, 30, tzinfo=BERLIN))
    second = next_run(every, first)
    assert [first.isoformat(), second.isoformat()] == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T02:30:00+01:00",
    ]
