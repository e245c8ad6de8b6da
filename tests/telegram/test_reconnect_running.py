"""A running Telegram channel that loses its Bot API (409 Conflict, a revoked
token, 502s) keeps polling, says so once in the log and in /status, and comes
back by itself; the backoff and the state lines as pure functions."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from bridge.channels.telegram.health import Backoff, Health
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, FAST, running, tg_settings
from tests.telegram.fake_bot_api import Failure, FakeBotAPI

BACK = "after the storm"
# python-telegram-bot retries a failed poll after 1 s, then 1.5 s, ...; from 1.5 times the
# poll interval when there is one: 0.015 s, then 0.0225 s, ...
RETRY_FAST = dataclasses.replace(FAST, poll_interval_s=0.01)

CONFLICT = Failure(
    409, "Conflict: terminated by other getUpdates request; make sure that only one bot is running"
)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("bridge.channels.telegram.channel")
    ]


@pytest.mark.parametrize(
    ("failures", "says"),
    [
        ((CONFLICT, CONFLICT), "another program is reading this bot's updates (409 Conflict)"),
        ((Failure.unauthorized(), Failure.unauthorized()), "Telegram refused the bot token"),
        ((Failure.bad_gateway(), Failure.bad_gateway()), "the Bot API is unreachable or failing"),
    ],
    ids=["conflict", "revoked", "bad-gateway"],
)
async def test_polling_failures_are_reported_once_and_recovered(
    home: Path,
    fake: FakeBotAPI,
    caplog: pytest.LogCaptureFixture,
    failures: tuple[Failure, ...],
    says: str,
) -> None:
    backend = ScriptedBackend(BACK)
    with caplog.at_level(logging.INFO):
        async with running(tg_settings(home, fake), fake, backend, RETRY_FAST) as t:
            await fake.wait_call("getUpdates")
            assert t.channel.status_line() == "telegram: up (@roost_test_bot, polling)"
            fake.fail("getUpdates", *failures)
            polls = len(fake.calls_of("getUpdates"))
            await fake.wait_until(lambda: t.channel.connection.health.state == "reconnecting")
            line = t.channel.status_line()
            assert line.startswith(f"telegram: reconnecting, last error: {says}"), line
            # sent while polling fails: the first good poll answers at once with it
            fake.push_text(ALICE, "are you back?")
            await fake.wait_until(lambda: len(fake.calls_of("getUpdates")) >= polls + 3)
            await fake.wait_until(lambda: t.channel.connection.health.state == "up")
            # under load the answer may show as a draft first ("after the storm …")
            await fake.wait_until(lambda: [m.text for m in fake.sent_to(ALICE)] == [BACK])
    said = [w for w in warnings_of(caplog) if says in w]
    assert len(said) == 1, warnings_of(caplog)  # two failed polls, one line
    infos = [r.getMessage() for r in caplog.records if "connected again" in r.getMessage()]
    assert infos == ["telegram: connected again (@roost_test_bot, polling) after 2 failed tries"]


def test_backoff_doubles_is_capped_and_jittered() -> None:
    b = Backoff(first_s=1.0, max_s=60.0)
    assert [b.delay(n, lambda: 1.0) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert b.delay(3, lambda: 0.0) == 2.0  # the jitter takes up to half of a step
    assert b.delay(10, lambda: 1.0) == 60.0 and b.delay(10_000, lambda: 1.0) == 60.0


def test_health_logs_changes_not_attempts(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    health = Health(clock=lambda: now[0])
    assert health.line() == "telegram: starting"
    with caplog.at_level(logging.DEBUG, logger="bridge.channels.telegram.channel"):
        for _ in range(5):
            health.failing("the Bot API is unreachable (x)", 12.0)
        now[0] += 2.4
        assert health.line() == (
            "telegram: reconnecting, last error: the Bot API is unreachable (x); next try in 10s"
        )
        health.failing("Telegram refused the bot token", 90.0)  # another reason: said again
        assert health.line().endswith("next try in 1min 30s")
        health.up("@bot, polling")
        health.up("@bot, polling")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["telegram: connected again (@bot, polling) after 6 failed tries"]
    assert health.line() == "telegram: up (@bot, polling)"
