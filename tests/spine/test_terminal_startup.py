"""Start-up: `roost --help` and `roost send /help` import only what they need.

Not timed (bench/startup.py measures): each command runs in a subprocess
that reports, as it exits, which heavy libraries `sys.modules` holds. A
command through the full pipeline must not bring in Telegram, the MCP SDK,
Pillow, pypdf or aiohttp (the configured model is not called for a
command), nor the terminal's rich and prompt_toolkit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.cli.table import ROWS, Row
from tests.waits import HANG_S

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("telegram", "mcp", "mcp_types", "PIL", "pypdf", "aiohttp", "rich", "prompt_toolkit")
PROBE = f"""
import atexit, json, runpy, sys
def report():
    loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
    sys.__stderr__.write("LOADED " + json.dumps(loaded) + "\\n")
atexit.register(report)
sys.argv = ["roost", *sys.argv[1:]]
runpy.run_module("bridge.cli.main", run_name="__main__")
"""


def loaded_by(args: list[str], home: Path) -> tuple[int, str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env |= {  # a model is configured, at an address nobody listens on: never called
        "ROOST_HOME": str(home),
        "ROOST_CONFIG": os.environ["ROOST_CONFIG"],
        "ROOST_LLM__BASE_URL": "http://127.0.0.1:9/v1",
        "ROOST_LLM__MODEL": "m1",
        "ROOST_LLM__API_KEY": "sk-test-key-000000000000",
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env=env,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    [line] = [x for x in done.stderr.splitlines() if x.startswith("LOADED ")]
    return done.returncode, done.stdout, json.loads(line.removeprefix("LOADED "))


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--help"], "COMMAND"), (["send", "/help"], "/help all")],
)
def test_a_command_imports_no_heavy_library(args: list[str], says: str, home: Path) -> None:
    code, out, loaded = loaded_by(args, home)
    assert code == 0 and says in out
    assert loaded == []


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_row_names_functions_that_exist(row: Row) -> None:
    """The table names its functions as strings (imported when chosen): none may be a typo."""
    found = row.resolve()
    assert len(found) == (1 if row.add_args is None else 2)
    assert all(callable(f) for f in found)
