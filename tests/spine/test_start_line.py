"""The start-up line says where the page's token is, and names no file that is not there."""

from __future__ import annotations

import re
import socket
from pathlib import Path

from bridge.app.channels_up import EVERY_ADDRESS, page_url, web_start_line
from tests.schedule.test_terminal_reminders import offline_env
from tests.spine.test_daemon import run, start_daemon


def test_the_line_for_each_source_of_the_token(tmp_path: Path) -> None:
    url, stored = "http://127.0.0.1:8787/", tmp_path / "web-token"
    first = web_start_line(url, "Zx3q", True, stored, tty=True)
    assert first.startswith(f"roost: web chat at {url}#token=Zx3q\n") and str(stored) in first
    logged = web_start_line(url, "Zx3q", True, stored)  # stdout no terminal (the journal)
    assert "Zx3q" not in logged and str(stored) in logged and "roost web-token" in logged
    later = web_start_line(url, "Zx3q", False, stored)
    assert later == f"roost: web chat at {url} (token in {stored})"
    configured = web_start_line(url, "Zx3q", False, None)
    assert "web-token" not in configured and "Zx3q" not in configured
    assert "web.token" in configured


async def test_a_token_from_the_environment_names_no_file(home: Path) -> None:
    env = {**offline_env(home), "ROOST_WEB__TOKEN": "env-token-0123456789"}
    daemon = await start_daemon(env)
    try:
        line = next(x for x in daemon.lines if "web chat at" in x)
    finally:
        code, _ = await daemon.stop()
    assert "web-token" not in line and "(token: the configured web.token)" in line
    assert "env-token" not in line
    assert not (home / "web-token").exists()
    assert code == 0


def test_a_wildcard_bind_shows_an_address_a_browser_can_open() -> None:
    assert page_url("0.0.0.0", 8790) == "http://127.0.0.1:8790/"
    assert page_url("::", 8790) == "http://127.0.0.1:8790/"
    assert page_url("::1", 8790) == "http://[::1]:8790/"
    assert page_url("192.168.1.5", 8790) == "http://192.168.1.5:8790/"
    line = web_start_line("http://127.0.0.1:8790/", "Zx3q", False, None, every_address=True)
    assert line.endswith("\n" + EVERY_ADDRESS) and "allowed_hosts" in EVERY_ADDRESS


async def test_a_daemon_on_every_address_says_what_a_remote_browser_needs(home: Path) -> None:
    env = {**offline_env(home), "ROOST_WEB__HOST": "0.0.0.0"}
    daemon = await start_daemon(env)
    try:
        lines = list(daemon.lines)
    finally:
        code, _ = await daemon.stop()
    chat = next(x for x in lines if "web chat at" in x)
    assert "http://127.0.0.1:" in chat and "0.0.0.0" not in chat
    assert EVERY_ADDRESS + "\n" in lines
    assert code == 0


async def test_a_first_start_that_fails_leaves_the_link_to_the_first_that_works(
    home: Path,
) -> None:
    """The first `serve` cannot listen (its port is taken): the next start is the one that
    makes the token (and keeps it, 0600) and says so; the one after it does not."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = {**offline_env(home), "ROOST_WEB__PORT": str(taken.getsockname()[1])}
        code, out, _ = await run(["serve"], busy)
    assert code != 0 and "web chat at" not in out

    daemon = await start_daemon(offline_env(home))
    code, _ = await daemon.stop()
    stored = home / "web-token"
    shown = re.search(
        r"web chat at http://127\.0\.0\.1:\d+/ \(a new access token is stored in (\S+);",
        "".join(daemon.lines),
    )
    assert shown is not None and shown.group(1) == str(stored), daemon.lines
    assert len(stored.read_text().strip()) >= 16
    assert stored.stat().st_mode & 0o777 == 0o600
    assert code == 0

    daemon = await start_daemon(offline_env(home))
    code, _ = await daemon.stop()
    line = next(x for x in daemon.lines if "web chat at" in x)
    assert "#token=" not in "".join(daemon.lines) and f"(token in {stored})" in line
    assert code == 0
