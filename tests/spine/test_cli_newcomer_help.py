"""Help and error texts a newcomer found lacking (s35 N18).

`roost send --help` listed no exit codes; `roost serve --help` named Telegram only of
the chat platforms; `roost tools list --help` gave `--tenant` no description; `roost
forget` with the daemon running advised "or set ROOST_HOME to another directory" (the
second daemon's advice: meaningless for deleting a tenant of this home); `roost send
--to bogus` began "roost:" where the other send errors begin "roost send:".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.app.instance import hold
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_cli_table import help_of
from tests.spine.test_daemon import env_for, fake, run

__all__ = ["fake"]  # the fixture, imported for the tests below


def made(folder: Path) -> None:
    """A folder of the home, as a daemon that ran leaves it."""
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)


def test_send_help_lists_its_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    out = help_of(["send"], capsys)
    tail = out.split("exit status:\n", 1)[1].splitlines()
    codes = [line.split()[0] for line in tail if line[:4].strip()]
    assert codes == ["0", "1", "2", "78"], out
    assert "--key without --to" in out and "no model is configured" in out


def test_serve_help_names_every_chat_platform(capsys: pytest.CaptureFixture[str]) -> None:
    out = " ".join(help_of(["serve"], capsys).split())
    assert all(name in out for name in ("Telegram", "WhatsApp", "Matrix")), out


def test_tools_list_help_describes_tenant(capsys: pytest.CaptureFixture[str]) -> None:
    out = help_of(["tools", "list"], capsys)
    line = next(line for line in out.splitlines() if line.strip().startswith("--tenant"))
    assert line.split("TENANT", 1)[1].strip() == "whose tools to list", out


async def test_forget_while_the_daemon_runs_says_to_stop_it(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake)
    made(home / "tenants" / "bob")
    daemon = hold(home)  # as a running `roost serve` holds it
    try:
        code, out, err = await run(["forget", "--tenant", "bob", "--yes"], env)
    finally:
        daemon.release()
    assert (code, out) == (1, "")
    assert err == (
        f"roost forget: a roost serve (pid {os.getpid()}) is running on {home}, and forget "
        "needs the home to itself (the daemon could write the tenant back): stop it first "
        "(systemctl stop roost; on PostgreSQL every instance sharing this home), then run "
        "roost forget again. Nothing was deleted.\n"
    )
    assert (home / "tenants" / "bob").is_dir()


async def test_every_send_to_refusal_starts_with_roost_send(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake)
    for argv in (["--to", "bogus", "x"], ["--to", "web:w1", "--key", "a b", "x"]):
        code, out, err = await run(["send", *argv], env)
        assert (code, out) == (2, ""), argv
        assert err.startswith("roost send: --"), err


def test_chat_forget_and_pair_help_say_what_a_newcomer_needs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """s46: `roost chat --help` named only --chat (not /quit, /attach, the tenant it runs
    as, where its log goes); `roost forget --help` neither said to stop the daemon nor to
    export first; `roost pair --help` not that TENANT must be configured."""
    chat = help_of(["chat"], capsys)
    for said in ("/quit", "Ctrl-D", "/attach PATH", "/detach", "local tenant", "chat.log"):
        assert said in chat, chat
    forget = " ".join(help_of(["forget"], capsys).split())
    assert "roost export --tenant T" in forget and "stop the daemon" in forget, forget
    pair = " ".join(help_of(["pair"], capsys).split())
    assert "[tenants.TENANT]" in pair and "/pair CODE" in pair, pair
