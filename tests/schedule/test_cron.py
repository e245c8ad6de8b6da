"""Cron expressions: fields, names, Vixie's day-of-month OR day-of-week, refusals,
and next_cron checked against a minute-by-minute brute force (seeded random)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bridge.schedule.cron import CronSpec, min_gap_minutes, next_cron, parse_cron
from bridge.schedule.when_tokens import WhenFail

BERLIN = ZoneInfo("Europe/Berlin")
UTCZ = ZoneInfo("UTC")
AFTER = datetime(2026, 12, 1, 10, 20, tzinfo=BERLIN)  # a Tuesday


def runs(expr: str, after: datetime, n: int, tz: ZoneInfo = BERLIN) -> list[str]:
    spec, out = parse_cron(expr), []
    for _ in range(n):
        after = next_cron(spec, after, tz)
        out.append(after.isoformat())
    return out


def test_fields_ranges_steps_and_names() -> None:
    spec = parse_cron("*/15 9-17/4 1,15 jan-mar mon-fri")
    assert spec.minutes == {0, 15, 30, 45}
    assert spec.hours == {9, 13, 17}
    assert spec.days == {1, 15}
    assert spec.months == {1, 2, 3}
    assert spec.weekdays == {0, 1, 2, 3, 4}
    assert parse_cron("5/20 * * * *").minutes == {5, 25, 45}


def test_sunday_is_0_and_7() -> None:
    assert parse_cron("0 0 * * 0").weekdays == parse_cron("0 0 * * 7").weekdays == {6}
    assert parse_cron("0 0 * * sun").weekdays == {6}


@pytest.mark.parametrize(
    ("expr", "first"),
    [
        ("*/15 * * * *", ["2026-12-01T10:30:00+01:00", "2026-12-01T10:45:00+01:00"]),
        ("0 7 * * 1-5", ["2026-12-02T07:00:00+01:00", "2026-12-03T07:00:00+01:00"]),
        ("30 8 1 * *", ["2027-01-01T08:30:00+01:00", "2027-02-01T08:30:00+01:00"]),
        ("0 9 * jan mon-fri", ["2027-01-01T09:00:00+01:00", "2027-01-04T09:00:00+01:00"]),
        ("0 0 29 2 *", ["2028-02-29T00:00:00+01:00", "2032-02-29T00:00:00+01:00"]),
        ("@daily", ["2026-12-02T00:00:00+01:00", "2026-12-03T00:00:00+01:00"]),
        ("@monthly", ["2027-01-01T00:00:00+01:00", "2027-02-01T00:00:00+01:00"]),
    ],
)
def test_next_runs(expr: str, first: list[str]) -> None:
    assert runs(expr, AFTER, len(first)) == first


def test_day_of_month_or_day_of_week_when_both_are_restricted() -> None:
    # Vixie cron: "0 0 13 * 5" is every 13th AND every Friday, not Friday the 13th.
    got = runs("0 0 13 * 5", AFTER, 4)
    assert got == [
        "2026-12-04T00:00:00+01:00",  # Friday
        "2026-12-11T00:00:00+01:00",  # Friday
        "2026-12-13T00:00:00+01:00",  # Sunday the 13th
        "2026-12-18T00:00:00+01:00",
    ]
    # Feb 29 OR any Monday in February: the first Monday comes first.
    assert runs("0 0 29 2 1", AFTER, 1) == ["2027-02-01T00:00:00+01:00"]


def test_a_star_step_in_day_of_month_makes_it_an_and() -> None:
    # A field that starts with `*` counts as unrestricted (Vixie's DOM_STAR):
    # odd days AND Fridays.
    got = runs("0 0 */2 * 5", AFTER, 3)
    assert got == [
        "2026-12-11T00:00:00+01:00",
        "2026-12-25T00:00:00+01:00",
        "2027-01-01T00:00:00+01:00",
    ]


@pytest.mark.parametrize(
    "expr",
    [
        "61 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *", "* * * 13 *", "* * * * 8",
        "*/0 * * * *", "5-1 * * * *", "* * * *", "* * * * * *", "@reboot", "@sometimes",
        "0 0 30 2 *", "0 0 31 4,6,9,11 *", "x * * * *", "* * * foo *", "* * * * mon-",
        "1,,2 * * * *", "* * * jan-dec-feb *",
    ],
)  # fmt: skip
def test_invalid_expressions_are_refused_with_a_reason(expr: str) -> None:
    with pytest.raises(WhenFail) as caught:
        parse_cron(expr)
    assert caught.value.code == "bad_cron"
    assert caught.value.detail


def test_min_gap_includes_the_wrap_across_midnight() -> None:
    assert min_gap_minutes(parse_cron("*/15 * * * *")) == 15
    assert min_gap_minutes(parse_cron("0 7 * * *")) == 1440
    assert min_gap_minutes(parse_cron("59 23 * * *")) == 1440
    assert min_gap_minutes(parse_cron("0,59 0,23 * * *")) == 1


def _matches(spec: CronSpec, at: datetime) -> bool:
    return at.minute in spec.minutes and at.hour in spec.hours and spec.day_matches(at.date())


def _random_expr(rng: random.Random) -> str:
    def field(low: int, high: int) -> str:
        kind = rng.randrange(5)
        if kind == 0:
            return "*"
        if kind == 1:
            return f"*/{rng.randint(1, max(1, (high - low) // 2))}"
        a = rng.randint(low, high)
        if kind == 2:
            return str(a)
        if kind == 3:
            return f"{a}-{rng.randint(a, high)}"
        return ",".join(str(rng.randint(low, high)) for _ in range(rng.randint(1, 3)))

    return " ".join([field(0, 59), field(0, 23), field(1, 28), field(1, 12), field(0, 6)])


def test_next_cron_agrees_with_brute_force_in_utc() -> None:
    """An independent oracle: walk minute by minute in UTC (no DST there)."""
    rng = random.Random(1313)
    checked = 0
    while checked < 80:
        spec = parse_cron(_random_expr(rng))
        after = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=rng.randrange(525_600))
        probe, expected = after.replace(second=0) + timedelta(minutes=1), None
        for _ in range(3 * 1440):
            if _matches(spec, probe):
                expected = probe
                break
            probe += timedelta(minutes=1)
        if expected is None:
            continue  # too sparse for a three-day walk
        assert next_cron(spec, after, UTCZ) == expected, spec.text
        checked += 1


@pytest.mark.parametrize("tz", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
def test_next_cron_is_after_and_strictly_increasing_across_a_year(tz: str) -> None:
    rng = random.Random(f"monotonic-{tz}")
    zone = ZoneInfo(tz)
    for _ in range(25):
        spec = parse_cron(_random_expr(rng))
        at = datetime(2026, 1, 1, tzinfo=zone) + timedelta(hours=rng.randrange(8760))
        for _ in range(40):
            nxt = next_cron(spec, at, zone)
            assert nxt > at
            assert str(nxt.tzinfo) == tz
            local = nxt.replace(tzinfo=None)
            # Either a listed wall time, or the end of a DST gap that swallowed one.
            assert (
                _matches(spec, local) or nxt.utcoffset() != (nxt - timedelta(hours=3)).utcoffset()
            )
            at = nxt
