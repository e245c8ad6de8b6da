"""The web page's token is masked in every log line, wherever it comes from.

The Redactor knew `web.token` from the settings only: a token kept in the home's
`web-token` file (made by the first start, the usual case), or made by this start,
would have been shown by any log line that carried it (ops2 s39), and so would a
`[tenants.X] web_token`. Now the token in force is taught to the log's Redactor
when the page takes it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.app.logging_setup import MASK, secret_values, setup_logging
from bridge.app.web_token import web_token
from bridge.core.config import load_settings

STORED = "Qm9vdHN0cmFwVG9rZW5LZXB0SW5Ib21l"
TENANT = "tenant-page-token-0123456789abcdef"


@pytest.fixture
def logged(capsys: pytest.CaptureFixture[str]) -> Iterator[pytest.CaptureFixture[str]]:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, sys.excepthook)
    yield capsys
    root.handlers[:], _, sys.excepthook = saved
    root.setLevel(saved[1])


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_stored_web_token_never_reaches_the_log(
    home: Path, logged: pytest.CaptureFixture[str], log_format: str
) -> None:
    home.mkdir(mode=0o700)
    (home / "web-token").write_text(STORED + "\n")
    settings = load_settings()
    setup_logging("INFO", secret_values(settings), log_format)  # as `roost serve` starts
    token, new = web_token(settings)  # the page takes it
    assert (token, new) == (STORED, False)
    logging.getLogger("aiohttp.server").warning("GET /?token=%s failed: Bearer=%s", token, token)
    err = logged.readouterr().err
    assert STORED not in err and MASK in err, err


def test_a_token_made_by_this_start_never_reaches_the_log(
    home: Path, logged: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings()
    setup_logging("INFO", secret_values(settings), "text")
    token, new = web_token(settings)
    assert new
    logging.getLogger("roost").warning("request with %s", token)
    err = logged.readouterr().err
    assert token not in err and f"request with {MASK}" in err, err


def test_a_tenants_page_token_never_reaches_the_log(
    home: Path, logged: pytest.CaptureFixture[str]
) -> None:
    (home.parent / "roost.toml").write_text(f'[tenants.alice]\nweb_token = "{TENANT}"\n')
    setup_logging("INFO", secret_values(load_settings()), "text")
    logging.getLogger("roost").warning("page of %s", TENANT)
    err = logged.readouterr().err
    assert TENANT not in err and f"page of {MASK}" in err, err


def test_a_secret_a_reload_brings_in_never_reaches_the_log(
    home: Path, logged: pytest.CaptureFixture[str]
) -> None:
    """A page token (or key) added by a reload is masked from that reload on, as the
    ones the daemon started with."""
    from bridge.app.notify import Notifier
    from bridge.app.reload import Reloader

    settings = load_settings()
    setup_logging("INFO", secret_values(settings), "text")
    (home.parent / "roost.toml").write_text(f'[tenants.alice]\nweb_token = "{TENANT}"\n')
    versions = iter(range(100))
    reloader = Reloader(
        settings, load_settings, Notifier(None), fingerprint=lambda: str(next(versions))
    )
    assert reloader.reload() is True
    logging.getLogger("roost").warning("page of %s", TENANT)
    err = logged.readouterr().err
    assert TENANT not in err and f"page of {MASK}" in err, err
