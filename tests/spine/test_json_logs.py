"""JSON log lines: one object per line (ts, level, logger, msg), never a secret.

The secrets are real-format ones (a Telegram bot token, an OpenAI-style
`sk-` key, a bearer header) and they are put in every place a record can
carry them: the message, its arguments, a URL-encoded URL, the logger
name and an exception's traceback.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from bridge.app.logging_setup import setup_logging
from bridge.core.config import ConfigError, load_settings

BOT = "7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"
API_KEY = "sk-proj-Zx81aQv0bT3BlbkFJr9mKqT0l2hN4"
STRANGER = "sk-abcdefghijklmnopqrstuvwx"  # not configured: caught by its shape


def forms(secret: str) -> list[str]:
    out = {secret, quote(secret), quote(secret, safe=""), quote_plus(secret)}
    _, _, tail = secret.partition(":")
    if len(tail) >= 8:
        out |= {tail, quote(tail, safe="")}
    return sorted(out)


class Stderr:
    """What setup_logging's handler wrote (it binds sys.stderr when called)."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys
        self._seen = ""

    def getvalue(self) -> str:
        self._seen += self._capsys.readouterr().err
        return self._seen


@pytest.fixture
def stderr(capsys: pytest.CaptureFixture[str]) -> Iterator[Stderr]:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, sys.excepthook)
    yield Stderr(capsys)
    root.handlers[:], _, sys.excepthook = saved
    root.setLevel(saved[1])


def lines(buffer: Stderr) -> list[dict[str, str]]:
    out = []
    for line in buffer.getvalue().splitlines():
        entry = json.loads(line)  # every line is one whole JSON object
        assert isinstance(entry, dict)
        out.append(entry)
    return out


def test_each_record_is_one_json_object_with_the_fields(stderr: Stderr) -> None:
    setup_logging("INFO", [], "json")
    logging.getLogger("roost.test").warning('two\nlines and a "quote" for %s', "Ana")
    logging.getLogger("roost.test").debug("below the level")
    (entry,) = lines(stderr)
    assert set(entry) == {"ts", "level", "logger", "msg"}
    assert entry["level"] == "WARNING" and entry["logger"] == "roost.test"
    assert entry["msg"] == 'two\nlines and a "quote" for Ana'
    assert datetime.strptime(entry["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")


def test_no_secret_in_any_field_or_spelling(stderr: Stderr) -> None:
    setup_logging("DEBUG", [BOT, API_KEY], "json")
    log = logging.getLogger("httpx")
    log.warning("POST https://api.telegram.org/bot%s/getUpdates failed", BOT)
    log.warning("retry %s", f"https://example.test/?t={quote(BOT, safe='')}")
    log.warning("tail only: %s", BOT.partition(":")[2])
    log.warning("header Authorization: Bearer %s", API_KEY)
    log.warning("an unknown key %s", STRANGER)
    logging.getLogger(f"plugin.{BOT}").error("named after the token")
    try:
        raise RuntimeError(f"backend refused key {API_KEY}")
    except RuntimeError:
        log.exception("model call failed")
    text = stderr.getvalue()
    entries = lines(stderr)
    assert len(entries) == 7
    assert "RuntimeError" in entries[-1]["exc"] and "[redacted]" in entries[-1]["exc"]
    for secret in (BOT, API_KEY, STRANGER):
        for form in forms(secret):
            assert form not in text, f"{form!r} leaked:\n{text}"


def test_text_stays_the_default(stderr: Stderr) -> None:
    setup_logging("INFO", [BOT])
    logging.getLogger("roost").warning("token %s", BOT)
    text = stderr.getvalue()
    assert not text.startswith("{") and "WARNING roost: token [redacted]" in text


def test_the_setting_and_its_variable(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().log_format == "text"
    monkeypatch.setenv("ROOST_LOG_FORMAT", "json")
    assert load_settings().log_format == "json"
    monkeypatch.setenv("ROOST_LOG_FORMAT", "xml")
    with pytest.raises(ConfigError, match="log_format"):
        load_settings()
