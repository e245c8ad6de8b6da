"""File and directory modes of a busy roost: nothing is readable by group or others.

The real daemon (`python -m bridge.cli.main serve`) is started with umask 022 in a
home that already exists as 0755; a few turns over the web API save memory
(by tool call and by /remember), write and save a personal tool and run it.
While the daemon still runs (so `roost.db-wal` and `-shm` exist), every file
under the home must be 0600-or-stricter and every directory 0700.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.spine.test_daemon import Daemon, env_for
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main"]
TOOL = '''
def run(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''


def make_open_home(home: Path) -> None:
    """The home exists already, readable by everyone (as `mkdir` under umask 022 leaves it)."""
    home.mkdir(mode=0o755)
    home.chmod(0o755)


def inventory(home: Path) -> tuple[set[str], int]:
    """Names of everything under `home`, and how many memory topic files exist."""
    names = {p.name for p in home.rglob("*")}
    return names, len(list(home.glob("tenants/local/global/memory/*_*.md")))


def loose(home: Path) -> list[str]:
    """Every path under `home` (itself included) with a group or other bit."""
    found = []
    for path in [home, *home.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        if mode & 0o077:
            found.append(f"{path.relative_to(home.parent)} {stat.filemode(mode)}")
    return found


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


UMASK = 0o022  # the common default; roost must not depend on it


async def start_daemon(env: dict[str, str]) -> Daemon:
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        "serve",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        umask=UMASK,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    port = 0
    while not (lines and lines[-1].startswith("roost: model")):
        raw = await asyncio.wait_for(proc.stdout.readline(), HANG_S)
        if not raw:
            _, err = await proc.communicate()
            raise AssertionError(f"daemon exited early: {err.decode()}")
        lines.append(raw.decode())
        match = re.search(r"web chat at http://127\.0\.0\.1:(\d+)/", lines[-1])
        if match:
            port = int(match.group(1))
    return Daemon(proc, port, lines)


async def test_a_busy_daemon_keeps_every_file_private(home: Path, fake: FakeOpenAI) -> None:
    make_open_home(home)
    fake.script(
        ToolCalls(
            [
                Call(
                    "memory_save",
                    {
                        "name": "trip",
                        "type": "project",
                        "description": "trip plans",
                        "content": "Zürich in May",
                    },
                )
            ]
        ),
        Text("noted"),
        ToolCalls([Call("forge_create", {"name": "add", "description": "add", "source": TOOL})]),
        Text("made add"),
        ToolCalls([Call("me__add", {"a": 2, "b": 3})]),
        Text("it is 5"),
    )
    daemon = await start_daemon(env_for(home, fake))
    token = (home / "web-token").read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}
    replies = []
    async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
        for text in (
            "remember my trip",
            "/remember my dentist is Dr. Brandt on Fridays",
            "write an adding tool",
            "/tool save add",
            "add 2 and 3",
        ):
            if text == "add 2 and 3":  # the consent prompt came back: confirm it
                r = await http.post("/api/chat", json={"text": "/tool save add yes"}, headers=auth)
                replies[3] = (await r.json())["reply"]
            r = await http.post("/api/chat", json={"text": text}, headers=auth)
            replies.append((await r.json())["reply"])
        try:
            assert replies[0] == "noted\n\n📝 Saved to memory: trip", replies
            assert replies[2].startswith("made add"), replies
            assert "Saved me.add" in replies[3] and replies[4] == "it is 5", replies
            names, topics = inventory(home)
            made = {"roost.db", "roost.db-wal", "roost.db-shm", "chain.jsonl", "web-token"}
            assert made | {"me.add.py", "MEMORY.md"} <= names, sorted(names)
            assert topics == 2
            assert loose(home) == []
        finally:
            code, stderr = await daemon.stop()
    assert code == 0
    assert "0700" in stderr and str(home) in stderr  # the tightening is logged


@pytest.mark.parametrize(
    "argv",
    [["send", "--tenant", "bob", "hello"], ["pair", "local"], ["prompt", "--tenant", "local"]],
)
async def test_operator_commands_create_private_files(
    home: Path, fake: FakeOpenAI, argv: list[str]
) -> None:
    make_open_home(home)
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        *argv,
        env=env_for(home, fake),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        umask=UMASK,
    )
    _, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert proc.returncode == 0, err.decode()
    assert (home / "roost.db").exists()
    assert loose(home) == []


def test_the_database_and_its_wal_are_private_under_any_umask(tmp_path: Path) -> None:
    from bridge.core.db import connect

    old = os.umask(0o022)
    try:
        leftover = tmp_path / "old.db-wal"
        leftover.write_bytes(b"")  # an older roost's WAL, 0644
        for name in ("new.db", "old.db"):
            conn = connect(tmp_path / name)
            conn.execute(
                "INSERT INTO sessions (tenant, channel, chat, started_at, updated_at)"
                " VALUES ('t', 'web', 'c', 0, 0)"
            )
            files = sorted(tmp_path.glob(f"{name}*"))
            assert {f.name for f in files} >= {name, f"{name}-wal", f"{name}-shm"}
            assert [(f.name, f.stat().st_mode & 0o777) for f in files] == [
                (f.name, 0o600) for f in files
            ]
            conn.close()
    finally:
        os.umask(old)
