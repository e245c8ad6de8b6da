"""Start-up: each `roost` command imports only what it needs.

Not timed (bench/startup.py measures): each command runs in a subprocess
that reports, as it exits, which heavy libraries and which of roost's own
heavy modules `sys.modules` holds. A command through the full pipeline must
not bring in Telegram, the MCP SDK, Pillow, pypdf or aiohttp (the configured
model is not called for a command), nor the terminal's rich and
prompt_toolkit; a real message brings in aiohttp's client for the model and
nothing else of that list; `roost --help` not even pydantic; `roost access`,
which reads the platform registry, not the composition root, the web
channel or the sandbox.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.cli.table import ROWS, Row
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.import_probe import PROBE, REPO, imported_by, modules_in
from tests.waits import HANG_S

HEAVY = ("telegram", "mcp", "mcp_types", "PIL", "pypdf", "aiohttp", "rich", "prompt_toolkit")
ROOT = (  # the composition root and what only a running roost needs
    "bridge.app.build",
    "bridge.app.roost",
    "bridge.app.wiring",
    "bridge.channels.web.channel",
    "bridge.schedule.runtime",
    "RestrictedPython",
    "forge.runner",
)
WATCHED = (*HEAVY, "pydantic", "pydantic_settings", *ROOT)
KEY = "sk-test-key-000000000000"


def environment(home: Path, model_url: str = "http://127.0.0.1:9/v1") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    return env | {  # a model is configured (by default where nobody listens: never called)
        "ROOST_HOME": str(home),
        "ROOST_CONFIG": os.environ["ROOST_CONFIG"],
        "ROOST_LLM__BASE_URL": model_url,
        "ROOST_LLM__MODEL": "m1",
        "ROOST_LLM__API_KEY": KEY,
        "ROOST_GRADING__JUDGE_DAILY_CAP": "0",
    }


def loaded_by(args: list[str], home: Path) -> tuple[int, str, list[str]]:
    code, out, modules = imported_by(args, environment(home))
    return code, out, sorted(m for m in WATCHED if m in modules)


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--help"], "COMMAND"), (["send", "/help"], "/help all")],
)
def test_a_command_imports_no_heavy_library(args: list[str], says: str, home: Path) -> None:
    code, out, loaded = loaded_by(args, home)
    assert code == 0 and says in out
    assert "(reply" not in out  # /help names "/help all" itself: no hint repeats it
    assert [m for m in loaded if m in HEAVY] == []


def test_help_imports_no_pydantic(home: Path) -> None:
    code, out, loaded = loaded_by(["--help"], home)
    assert code == 0 and "COMMAND" in out
    assert loaded == []


def test_an_operator_command_imports_no_running_roost(home: Path) -> None:
    """`roost access` reads the platform registry (`channels_up.PLATFORMS`), not the
    channels, the composition root or the sandbox."""
    code, out, loaded = loaded_by(["access", "list"], home)
    assert code == 0 and "nobody is mapped" in out
    assert [m for m in loaded if m in HEAVY or m in ROOT] == []


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, models=["m1"]) as server:
        yield server


async def test_a_message_imports_the_model_client_and_nothing_else_heavy(
    home: Path, fake: FakeOpenAI
) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        PROBE,
        "send",
        "hello",
        env=environment(home, fake.base_url),
        cwd=REPO,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert proc.returncode == 0 and out.decode() == "echo: hello\n"
    assert [m for m in HEAVY if m in modules_in(err.decode())] == ["aiohttp"]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_row_names_functions_that_exist(row: Row) -> None:
    """The table names its functions as strings (imported when chosen): none may be a typo."""
    found = row.resolve()
    assert len(found) == (1 if row.add_args is None else 2)
    assert all(callable(f) for f in found)
