"""A `/remind` set with `roost send --tenant T` names a `roost chat` that shows it to T.

A newcomer (s35 N10) ran `roost send --tenant alice "/remind in 1m …"` and was told
"It will show in `roost chat --chat send`"; but `roost chat` has no `--tenant` and
runs as the local tenant, so that chat never showed alice's reminder (only
`ROOST_LOCAL_TENANT=alice roost chat --chat send` did). The confirmation now names
that command, and the test runs exactly the command it names. Through the real
processes: a daemon runs the job, its time is moved to now in roost.db (`fire_now`).
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from bridge.schedule.planning import arrival
from tests.schedule.test_terminal_reminders import (
    GUARD_S,
    ROOST,
    fire_now,
    job_id,
    offline_env,
    settled,
)
from tests.spine.test_daemon import Daemon, start_daemon

ALICE = '[tenants.alice]\nweb_token = "alice-web-token-0123456789"\n'


def configure(text: str) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(text)


@pytest.fixture
async def daemon(home: Path) -> AsyncIterator[Daemon]:
    """The daemon, with alice configured before it starts."""
    configure(ALICE)
    running = await start_daemon(offline_env(home))
    yield running
    await running.stop()


async def roost(home: Path, args: list[str], env: dict[str, str], stdin: bytes = b"") -> str:
    proc = await asyncio.create_subprocess_exec(
        *ROOST, *args, env=offline_env(home) | env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(stdin), GUARD_S)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def named_command(confirmation: str) -> tuple[dict[str, str], list[str]]:
    """The command the confirmation names: its leading VAR=value words, and roost's args."""
    found = re.search(r"It will show in `([^`]+)`", confirmation)
    assert found, confirmation
    words = shlex.split(found.group(1))
    env = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))
    rest = [w for w in words if not ("=" in w and not w.startswith("-"))]
    assert rest[0] == "roost", confirmation
    return env, rest[1:]


async def test_the_hint_of_a_tenants_reminder_names_a_chat_that_shows_it(
    home: Path, daemon: Daemon
) -> None:
    confirmation = await roost(
        home, ["send", "--tenant", "alice", "/remind in 2 hours ping alice"], {}
    )
    env, args = named_command(confirmation)
    assert args == ["chat", "--chat", "send"]
    fire_now(home, job_id(confirmation))
    await settled(home, 1)
    assert "ping alice" not in await roost(home, ["chat", "--chat", "send"], {})  # the local's
    shown = await roost(home, args, env)  # exactly what alice was told to run
    assert "While you were away:\n⏰ ping alice\n" in shown


async def test_the_local_tenants_hint_stays_plain(home: Path, daemon: Daemon) -> None:
    confirmation = await roost(home, ["send", "/remind in 2 hours stretch"], {})
    assert named_command(confirmation) == ({}, ["chat", "--chat", "send"])


async def test_with_a_configured_local_tenant_the_hint_names_whom_roost_chat_runs_as(
    home: Path,
) -> None:
    """`local_tenant = "me"`: a plain `roost chat` runs as me. Sent `--tenant me`, the hint
    is the plain command; sent `--tenant alice`, it names alice (the CLI's roost is built
    with the `--tenant` one as its local tenant: the hint must not take it for whom
    `roost chat` runs as)."""
    configure('local_tenant = "me"\n' + ALICE)
    running = await start_daemon(offline_env(home))
    try:
        mine = await roost(home, ["send", "--tenant", "me", "/remind in 2 hours stretch"], {})
        assert named_command(mine) == ({}, ["chat", "--chat", "send"])
        hers = await roost(home, ["send", "--tenant", "alice", "/remind in 2 hours ping"], {})
        assert named_command(hers) == ({"ROOST_LOCAL_TENANT": "alice"}, ["chat", "--chat", "send"])
    finally:
        await running.stop()


@pytest.mark.parametrize(
    "chat", ["my chat;$(id)", "a`b", "`x`", "tick ``` run", "'quoted' \"both\"", "plain"]
)
def test_the_named_command_is_safe_to_paste_whatever_the_chat_name(chat: str) -> None:
    """A chat name is any text: the hint's command, read as Markdown (how `roost chat`
    shows it) and split as a shell would, runs `roost chat` on exactly that chat, as
    exactly that tenant (session 36's attacker F6: `my chat;$(id)` ran `id`)."""
    note = arrival("cli", chat, True, "alice", "local")
    tokens = MarkdownIt("commonmark").parseInline(note)[0].children or []
    (code,) = [t.content for t in tokens if t.type == "code_inline"]
    assert shlex.split(code) == ["ROOST_LOCAL_TENANT=alice", "roost", "chat", "--chat", chat]
