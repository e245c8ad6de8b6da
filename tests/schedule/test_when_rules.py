"""parse_when beyond the corpus: echo, errors a person reads, hostile input."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bridge.schedule.when import When, WhenError, parse_when
from bridge.schedule.when_tokens import MAX_TOKENS, tokenize

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime.fromisoformat("2026-12-01T10:20:00+01:00")


def ok(text: str, now: datetime = NOW, tz: ZoneInfo = BERLIN) -> When:
    got = parse_when(text, now, tz)
    assert isinstance(got, When), got
    return got


def err(text: str, now: datetime = NOW) -> WhenError:
    got = parse_when(text, now, BERLIN)
    assert isinstance(got, WhenError), got
    return got


def test_remind_example_from_the_issue() -> None:
    got = ok("tomorrow 9:00 call the dentist")
    assert got.at == datetime(2026, 12, 2, 9, 0, tzinfo=BERLIN)
    assert got.rest == "call the dentist"
    assert got.echo == "tomorrow, Wed 2 Dec 09:00"


@pytest.mark.parametrize(
    ("text", "echo"),
    [
        ("in 20m bread", "in 20 minutes, Tue 1 Dec 10:40"),
        ("in 1h30 bread", "in 1 hour 30 minutes, Tue 1 Dec 11:50"),
        ("next monday 10:00 sprint", "Mon 7 Dec 10:00"),
        ("2027-01-05 9:00 tax", "Tue 5 Jan 2027 09:00"),
        ("morgen um 9:30 Zahnarzt", "morgen, Mi 2. Dez 09:30"),
        ("in 2 Stunden x", "in 2 Stunden, Di 1. Dez 12:20"),
        ("at 9:00 standup", "tomorrow, Wed 2 Dec 09:00"),
    ],
)
def test_echo_says_what_was_understood(text: str, echo: str) -> None:
    assert ok(text).echo == echo


def test_the_echo_names_a_time_moved_by_the_clock_change() -> None:
    got = ok("tomorrow 2:30 x", now=datetime.fromisoformat("2026-03-28T12:00:00+01:00"))
    assert got.at.isoformat() == "2026-03-29T03:00:00+02:00"
    assert "02:30 does not exist" in got.echo
    de = parse_when("morgen 2:30 x", datetime.fromisoformat("2026-03-28T12:00:00+01:00"), BERLIN)
    assert isinstance(de, When) and "Zeitumstellung" in de.echo


def test_errors_echo_what_was_read_and_give_a_working_example() -> None:
    past = err("yesterday 9:00 call")
    assert "yesterday, Mon 30 Nov 09:00" in past.message
    assert isinstance(parse_when(past.example, NOW, BERLIN), When)
    vague = err("sometime call mom")
    assert "'sometime call mom'" in vague.message
    assert isinstance(parse_when(vague.example, NOW, BERLIN), When)
    de = err("irgendwann Mama anrufen")
    assert de.code == "not_understood"
    bad = err("31.02.2027 9:00 x")
    assert "31.02.2027" in bad.message and bad.example in bad.message


def test_german_errors_are_german() -> None:
    got = err("gestern 9 Uhr x")
    assert got.message.startswith("Diese Zeit liegt nicht in der Zukunft")
    assert "Zum Beispiel" in got.message
    assert isinstance(parse_when(got.example, NOW, BERLIN), When)


def test_every_error_example_parses() -> None:
    for text in ["25:00 x", "in -5m x", "12/24 x", "in 6 years x", "Feb 30 x", "", "soon x"]:
        got = err(text)
        assert isinstance(parse_when(got.example, NOW, BERLIN), When), got.example


def test_now_must_be_aware() -> None:
    with pytest.raises(ValueError, match="aware"):
        parse_when("in 20m x", datetime(2026, 12, 1, 10, 20), BERLIN)


def test_instant_is_independent_of_the_zone_now_is_written_in() -> None:
    utc_now = datetime.fromisoformat("2026-12-01T09:20:00+00:00")
    assert ok("tomorrow 9:00 x", now=utc_now).at == ok("tomorrow 9:00 x").at
    ny = ok("tomorrow 9:00 x", now=utc_now, tz=ZoneInfo("America/New_York"))
    assert ny.at.isoformat() == "2026-12-02T09:00:00-05:00"


def test_rest_keeps_the_message_as_written() -> None:
    got = ok("in 20m   Take  *the* bread out!  ")
    assert got.rest == "Take  *the* bread out!"


JUNK = [
    "9" * 100_000,
    "1h" * 50_000,
    ":" * 100_000,
    "2026-" * 20_000,
    "in " * 33_000,
    "in 1 and " * 11_000,
    "tomorrow " * 11_000,
    "\u00a0x" * 50_000,
    "a" * 100_000,
    "-" * 100_000,
    "9:00 " * 20_000,
    "".join(chr(0x20 + (i * 7919) % 0x3000) for i in range(100_000)),
]


@pytest.mark.parametrize("junk", JUNK, ids=[f"junk{i}" for i in range(len(JUNK))])
def test_hostile_input_of_100k_characters_reads_only_a_short_prefix(junk: str) -> None:
    assert len(tokenize(junk)) <= MAX_TOKENS
    got = parse_when(junk, NOW, BERLIN)
    assert isinstance(got, When | WhenError)
    assert len(str(got.message if isinstance(got, WhenError) else got.echo)) < 400


def test_a_valid_time_before_100k_of_text_keeps_all_the_text() -> None:
    body = "x" * 100_000
    got = ok("in 20m " + body)
    assert got.rest == body


def test_in_the_repeated_autumn_hour_a_passed_first_occurrence_is_past() -> None:
    # 02:20 in the second pass (CET): 02:30 CEST already happened 50 minutes ago.
    now = datetime(2026, 10, 25, 2, 20, tzinfo=BERLIN, fold=1)
    assert now.utcoffset() == timedelta(hours=1)
    got = ok("at 2:30 x", now=now)
    assert got.at.isoformat() == "2026-10-26T02:30:00+01:00"
    assert err("today 2:30 x", now=now).code == "past"
