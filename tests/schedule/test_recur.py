"""/every specs: the phrasings, the rest of the text, the stored spec, limits, restarts."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bridge.schedule.cron import CronSpec
from bridge.schedule.recur import (
    Every,
    Interval,
    WhenError,
    catch_up,
    check_min_interval,
    due_once,
    next_run,
    parse_every,
)

BERLIN = ZoneInfo("Europe/Berlin")
AFTER = datetime(2026, 12, 1, 10, 20, tzinfo=BERLIN)  # Tuesday


def every(text: str, tz: ZoneInfo = BERLIN) -> Every:
    got = parse_every(text, tz)
    assert isinstance(got, Every), got
    return got


@pytest.mark.parametrize(
    ("text", "first_run", "rest"),
    [
        ("weekday 07:30 summarize my inbox", "2026-12-02T07:30:00+01:00", "summarize my inbox"),
        ("weekdays at 7:30 news", "2026-12-02T07:30:00+01:00", "news"),
        ("on weekdays at 7:30 news", "2026-12-02T07:30:00+01:00", "news"),
        ("daily 8:00 weather", "2026-12-02T08:00:00+01:00", "weather"),
        ("every day 8am weather", "2026-12-02T08:00:00+01:00", "weather"),
        ("monday 9:00 plan the week", "2026-12-07T09:00:00+01:00", "plan the week"),
        ("mon,wed,fri 18:00 gym", "2026-12-02T18:00:00+01:00", "gym"),
        ("mon, wed and fri 18:00 gym", "2026-12-02T18:00:00+01:00", "gym"),
        ("weekends 10:00 brunch", "2026-12-05T10:00:00+01:00", "brunch"),
        ("1h me.check_site", "2026-12-01T11:20:00+01:00", "me.check_site"),
        ("30m me.check_site always", "2026-12-01T10:50:00+01:00", "me.check_site always"),
        ("2h me.check_site on change", "2026-12-01T12:20:00+01:00", "me.check_site on change"),
        ("every 2 hours x", "2026-12-01T12:20:00+01:00", "x"),
        ("hourly x", "2026-12-01T11:20:00+01:00", "x"),
        ("werktags 7:30 Nachrichten", "2026-12-02T07:30:00+01:00", "Nachrichten"),
        ("täglich 8 Uhr Wetter", "2026-12-02T08:00:00+01:00", "Wetter"),
        ("jeden Tag um 8 Wetter", "2026-12-02T08:00:00+01:00", "Wetter"),
        ("montags 9 Uhr Wochenplan", "2026-12-07T09:00:00+01:00", "Wochenplan"),
        ("Mo,Mi,Fr 18 Uhr Sport", "2026-12-02T18:00:00+01:00", "Sport"),
        ("Mo-Fr 7 Uhr x", "2026-12-02T07:00:00+01:00", "x"),
        ("am Wochenende um 10 Uhr x", "2026-12-05T10:00:00+01:00", "x"),
        ("alle 15 Minuten x", "2026-12-01T10:35:00+01:00", "x"),
        ("*/15 * * * * x", "2026-12-01T10:30:00+01:00", "x"),
        ("0 7 * * 1-5 news", "2026-12-02T07:00:00+01:00", "news"),
        ("30 8 1 * * rent", "2027-01-01T08:30:00+01:00", "rent"),
        ("0 9 * * mon-fri x", "2026-12-02T09:00:00+01:00", "x"),
        ("0 9 1 jan * x", "2027-01-01T09:00:00+01:00", "x"),
        ("@hourly x", "2026-12-01T11:00:00+01:00", "x"),
    ],
)
def test_phrasings(text: str, first_run: str, rest: str) -> None:
    got = every(text)
    assert next_run(got, AFTER).isoformat() == first_run
    assert got.rest == rest


def test_echo_in_the_language_written() -> None:
    assert every("weekdays 7:30 x").echo == "weekdays at 07:30 (Europe/Berlin)"
    assert every("werktags 7:30 x").echo == "werktags um 07:30 (Europe/Berlin)"
    assert every("montags 9 Uhr x").echo == "montags um 09:00 (Europe/Berlin)"
    assert every("monday 9:00 x").echo == "every Monday at 09:00 (Europe/Berlin)"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("daily call mom", "no_time"),
        ("weekdays x", "no_time"),
        ("täglich x", "no_time"),
        ("sometime x", "not_understood"),
        ("", "empty"),
        ("61 * * * * x", "bad_cron"),
        ("0 0 30 2 * x", "bad_cron"),
        ("@reboot x", "bad_cron"),
        ("every 2 days x", "not_understood"),
        ("0m x", "too_often"),
        ("daily 25:00 x", "invalid_time"),
        ("in -5m x", "not_understood"),
    ],
)
def test_refusals_say_why_and_show_a_working_spec(text: str, code: str) -> None:
    got = parse_every(text, BERLIN)
    assert isinstance(got, WhenError), got
    assert got.code == code, got.message
    assert got.example in got.message
    assert isinstance(parse_every(got.example, BERLIN), Every), got.example


def test_stored_spec_reads_back_to_the_same_rule() -> None:
    rng = random.Random(7)
    texts = ["weekdays 7:30 x", "mon,wed,fri 18:00 x", "1h30m x", "45m x", "@weekly x",
             "0 9 * jan mon-fri x", "am Wochenende um 10 Uhr x", "90s x"]  # fmt: skip
    for text in texts:
        first = every(text)
        again = every(first.spec)
        assert again.rule == first.rule, text
        at = AFTER + timedelta(minutes=rng.randrange(100_000))
        assert next_run(again, at) == next_run(first, at)


def test_a_new_time_zone_moves_the_wall_clock_job() -> None:
    stored = every("daily 8:00 x").spec
    ny = every(stored, ZoneInfo("America/New_York"))
    assert next_run(ny, AFTER).isoformat() == "2026-12-01T08:00:00-05:00"


def test_minimum_interval() -> None:
    five = timedelta(minutes=5)
    assert check_min_interval(every("5m x"), five) is None
    assert check_min_interval(every("*/5 * * * * x"), five) is None
    assert check_min_interval(every("weekdays 7:30 x"), five) is None
    for text in ["1m x", "90s x", "* * * * * x", "*/2 * * * * x", "0,1 8 * * * x"]:
        got = check_min_interval(every(text), five)
        assert isinstance(got, WhenError), text
        assert got.code == "too_often"
        assert "5m" in got.message
    de = check_min_interval(every("1m x"), five, lang="de")
    assert de is not None and "erlaubt" in de.message


def test_missed_while_down_runs_once_then_resumes_on_the_grid() -> None:
    job = every("daily 8:00 x")
    last = datetime(2026, 12, 1, 8, 0, tzinfo=BERLIN)
    back = datetime(2026, 12, 4, 12, 0, tzinfo=BERLIN)  # three slots missed
    assert due_once(job, last, back)
    due, nxt = catch_up(job, last, back)
    assert due and nxt.isoformat() == "2026-12-05T08:00:00+01:00"
    assert not due_once(job, last, datetime(2026, 12, 2, 7, 59, tzinfo=BERLIN))
    assert due_once(job, last, datetime(2026, 12, 2, 8, 0, tzinfo=BERLIN))


def test_a_restart_loop_runs_a_missed_job_exactly_once() -> None:
    job = every("*/15 * * * * x")
    last = datetime(2026, 12, 1, 10, 0, tzinfo=BERLIN)
    now = datetime(2026, 12, 1, 16, 7, tzinfo=BERLIN)  # 24 slots missed
    ran: list[datetime] = []
    for _ in range(3):  # the scheduler wakes up three times at the same instant
        if due_once(job, last, now):
            ran.append(now)
            last = now
    assert ran == [now]
    assert next_run(job, last).isoformat() == "2026-12-01T16:15:00+01:00"


def test_interval_counts_from_the_last_run() -> None:
    job = every("1h x")
    last = datetime(2026, 12, 1, 10, 0, tzinfo=BERLIN)
    assert not due_once(job, last, last + timedelta(minutes=59))
    assert due_once(job, last, last + timedelta(hours=1))


def test_property_next_run_is_after_and_monotonic() -> None:
    rng = random.Random(2026)
    specs = ["1h x", "7m x", "weekdays 7:30 x", "*/15 * * * * x", "0 0 13 * 5 x",
             "mon,wed,fri 18:00 x", "0 2 * * * x", "30 2 * * * x", "0 0 29 2 * x"]  # fmt: skip
    for tz in ("Europe/Berlin", "America/New_York", "Asia/Kolkata"):
        for text in specs:
            job = every(text, ZoneInfo(tz))
            points = sorted(
                datetime(2026, 1, 1, tzinfo=ZoneInfo("UTC"))
                + timedelta(seconds=rng.randrange(3 * 10**7))
                for _ in range(30)
            )
            nexts = [next_run(job, p) for p in points]
            assert all(n > p for n, p in zip(nexts, points, strict=True))
            assert nexts == sorted(nexts), (tz, text)
            assert isinstance(job.rule, Interval | CronSpec)
