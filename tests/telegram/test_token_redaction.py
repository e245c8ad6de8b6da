"""The bot token never reaches stderr: log lines, tracebacks and exit messages.

Real-format and short tokens; a Bot API URL that lacks `/bot` is refused at
start-up (exit 78, no request made); the "unreachable" status line and
every warning of the real daemon are checked for the token in any form
(plain, URL-encoded, the secret half alone).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from bridge.app.logging_setup import Redactor
from bridge.channels.telegram.channel import TelegramChannel, TelegramOptions
from bridge.channels.telegram.health import Backoff
from bridge.core.config import ConfigError, TelegramSettings, load_settings
from tests.telegram.conftest import TOKEN, env_for
from tests.telegram.fake_bot_api import Failure, FakeBotAPI
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main"]
TOKENS = [TOKEN, "1:x", "abc", "987654:AAE-short_tail"]


def forms(token: str) -> list[str]:
    """Every spelling of the token a log line could carry."""
    out = {token, quote(token), quote(token, safe=""), quote_plus(token)}
    _, _, tail = token.partition(":")
    if len(tail) >= 8:
        out |= {tail, quote(tail, safe="")}
    return sorted(out)


def assert_clean(text: str, token: str) -> None:
    for form in forms(token):
        assert form not in text, f"{form!r} leaked:\n{text}"


async def run_daemon(env: dict[str, str], until: Any = None) -> tuple[int, str]:
    """Run `roost serve` until it exits, or until `until()` (awaited) returns, then SIGTERM."""
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        "serve",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    if until is not None:
        try:
            await until()
        finally:
            proc.send_signal(signal.SIGTERM)
    out, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert proc.returncode is not None
    return proc.returncode, out.decode() + err.decode()


@pytest.mark.parametrize("suffix", ["/", "", "/bot/", "/api"])
async def test_a_bot_api_url_without_bot_fails_fast(home: Path, suffix: str) -> None:
    async with FakeBotAPI(TOKEN) as fake:
        base = f"http://127.0.0.1:{fake.port}{suffix}"
        code, logs = await run_daemon(env_for(home, TOKEN, base))
        assert fake.calls == [], "no request may be made with a malformed base URL"
    assert code == 78, logs
    assert "ROOST_TELEGRAM__API_BASE_URL" in logs and "/bot" in logs
    assert_clean(logs, TOKEN)


def test_the_base_url_rule_in_config() -> None:
    assert load_settings(telegram={"api_base_url": "http://h:1/bot"}).telegram.api_base_url
    for bad in ("http://h:1/", "http://h:1", "ftp://h/bot", "http://h/bot?x=1"):
        with pytest.raises(ConfigError, match=r"telegram\.api_base_url"):
            load_settings(telegram={"api_base_url": bad})


def test_the_reconnect_back_off_in_config() -> None:
    assert load_settings().telegram.reconnect_first_s == 1.0
    assert load_settings(telegram={"reconnect_first_s": 0.05}).telegram.reconnect_first_s == 0.05
    for bad in (0, -1, 61):
        with pytest.raises(ConfigError, match=r"telegram\.reconnect_first_s"):
            load_settings(telegram={"reconnect_first_s": bad})


@pytest.mark.parametrize("token", TOKENS)
async def test_the_daemon_never_prints_the_token(home: Path, token: str) -> None:
    """Warnings (retries), httpx debug lines and the status lines of a daemon
    whose Bot API answers 500, 502 and 401 before it works. The daemon's back-off
    starts at `[telegram] reconnect_first_s` (here 0.05 s: 0.05, 0.1, 0.2 s, halved by
    jitter at most) instead of its default 1 s."""
    failures = [Failure.server_error(), Failure.bad_gateway(), Failure.unauthorized()]
    async with FakeBotAPI(token) as fake:
        fake.fail("getMe", *failures)
        env = env_for(home, token, fake.base_url, ROOST_TELEGRAM__RECONNECT_FIRST_S="0.05")
        code, logs = await run_daemon(env, lambda: fake.wait_call("getUpdates", limit_s=HANG_S))
        assert len(fake.calls_of("getMe")) == len(failures) + 1
    assert code == 0, logs
    assert "the Bot API is unreachable or failing" in logs
    assert "Telegram refused the bot token (401 Unauthorized)" in logs
    assert_clean(logs, token)


@pytest.mark.parametrize("token", TOKENS)
async def test_the_status_line_of_a_glued_url_hides_the_token(
    token: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A base URL without a slash glues the token to the port: httpx then quotes
    the whole URL in its error. The real error, through the one redaction point."""
    settings = TelegramSettings.model_construct(
        token=TelegramSettings(token=token).token, api_base_url="http://127.0.0.1:1"
    )
    options = TelegramOptions(reconnect=Backoff(first_s=30.0))
    unused: Any = None  # the channel never gets past getMe
    channel = TelegramChannel(settings, unused, lambda: [], options)
    with caplog.at_level(logging.DEBUG):
        await channel.start()  # returns: the channel retries in the background
    try:
        raw = "\n".join(caplog.text.splitlines())
        assert any(f in raw for f in forms(token)), "the raw error does carry the token"
        assert_clean(Redactor([token]).redact(raw), token)
        line = channel.status_line()  # shown to chat users by /status
        assert line.startswith("telegram: reconnecting, last error: the Bot API is unreachable")
        assert_clean(line, token)
    finally:
        await channel.stop()


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def test_records_tracebacks_and_names_are_redacted() -> None:
    token = "42:short"
    redactor = Redactor([token])
    handler = Lines()
    lines = handler.lines
    handler.setFormatter(redactor.formatter("%(name)s %(message)s"))
    log = logging.getLogger(f"roost.test.{token}")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("url http://x/bot%s/getMe and %s", token, quote(token, safe=""))
        try:
            raise RuntimeError(f"boom {token}")
        except RuntimeError:
            log.exception("failed")
        log.warning("stack", stack_info=True, extra={"t": token})
    finally:
        log.removeHandler(handler)
    text = "\n".join(lines)
    assert "boom [redacted]" in text and "Traceback" in text
    assert_clean(text, token)


def test_unknown_tokens_are_masked_by_shape() -> None:
    redactor = Redactor()
    for line in (
        f"POST https://api.telegram.org/bot{TOKEN}/getMe",
        "POST https://api.telegram.org/bot1:x/getMe",
        f"token {TOKEN} rejected",
        "Authorization: Bearer abcdefgh12345678",
    ):
        cleaned = redactor.redact(line)
        assert "[redacted]" in cleaned
        assert TOKEN not in cleaned and "bot1:x" not in cleaned and "abcdefgh1234" not in cleaned
