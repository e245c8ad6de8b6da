"""The bot token never reaches a log line: in process and from the real daemon."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.app.logging_setup import RedactingFilter
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, TOKEN, env_for, running, tg_settings
from tests.telegram.fake_bot_api import Failure, FakeBotAPI
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main"]


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.addFilter(RedactingFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def collected() -> Iterator[Collect]:
    handler = Collect()
    root = logging.getLogger()
    names = ("httpx", "httpcore", "telegram", "bridge")
    old = {n: logging.getLogger(n).level for n in names}
    root.addHandler(handler)
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        for name, level in old.items():
            logging.getLogger(name).setLevel(level)


async def test_debug_logs_with_failures_never_show_the_token(
    home: Path, fake: FakeBotAPI, collected: Collect
) -> None:
    fake.fail("getMe", Failure.server_error())
    fake.fail("sendMessage", Failure.bad_gateway(), Failure.unauthorized())
    fake.fail("setMyCommands", Failure.server_error())
    async with running(tg_settings(home, fake), fake, ScriptedBackend("x", "y")):
        fake.push_text(ALICE, "one")
        fake.push_text(ALICE, "two")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 1)
    text = "\n".join(collected.lines)
    assert f"127.0.0.1:{fake.port}/bot[redacted]/sendMessage" in text, "URLs were logged"
    assert "Internal Server Error" in text and "Bad Gateway" in text
    secret_part = TOKEN.split(":")[1]
    assert TOKEN not in text and secret_part not in text


def daemon_env(home: Path, fake: FakeBotAPI) -> dict[str, str]:
    return env_for(home, TOKEN, fake.base_url)


async def test_the_daemon_serves_telegram_without_logging_the_token(
    home: Path, fake: FakeBotAPI
) -> None:
    fake.fail("getMe", Failure.server_error())
    fake.fail("sendMessage", Failure.bad_gateway())
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        "serve",
        # the failed getMe is tried again after 0.05 s or less, not up to 1 s
        env=daemon_env(home, fake) | {"ROOST_TELEGRAM__RECONNECT_FIRST_S": "0.05"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await fake.wait_call("getUpdates", limit_s=HANG_S)
        fake.push_text(ALICE, "/start")
        await fake.wait_until(lambda: bool(fake.sent_to(ALICE)), limit_s=HANG_S)
        assert fake.sent_to(ALICE)[0].text.startswith("Hi user111111! I'm roost")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    logs = out.decode() + err.decode()
    assert proc.returncode == 0, logs
    assert "roost: telegram: reconnecting, last error: the Bot API is unreachable" in logs
    assert "telegram: connected again (@roost_test_bot, polling) after 1 failed try" in logs
    assert "Internal Server Error" in logs and "Bad Gateway" in logs
    assert TOKEN not in logs and TOKEN.split(":")[1] not in logs
