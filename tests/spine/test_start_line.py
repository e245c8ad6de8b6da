"""The start-up line says where the page's token is, and names no file that is not there."""

from __future__ import annotations

from pathlib import Path

from bridge.app.channels_up import web_start_line
from tests.schedule.test_terminal_reminders import offline_env
from tests.spine.test_daemon import start_daemon


def test_the_line_for_each_source_of_the_token(tmp_path: Path) -> None:
    url, stored = "http://127.0.0.1:8787/", tmp_path / "web-token"
    first = web_start_line(url, "Zx3q", True, stored)
    assert first.startswith(f"roost: web chat at {url}#token=Zx3q\n") and str(stored) in first
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
