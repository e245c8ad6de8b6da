"""The garbage collector while `roost` starts: paused, then the start-up frozen, then on.

Each command runs as its own process, with a probe that counts the
collector's runs by generation and reports, at exit, whether it is on and
how many objects sit in the permanent generation. Not timed:
bench/startup.py measures what it saves.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from bridge.cli import collector
from bridge.cli.main import main
from tests.waits import HANG_S

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import atexit, gc, json, runpy, sys
runs = [0, 0, 0]
def count(phase, info):
    if phase == "start":
        runs[info["generation"]] += 1
gc.callbacks.append(count)
def report():
    state = {"on": gc.isenabled(), "frozen": gc.get_freeze_count(), "runs": runs,
             "threshold": gc.get_threshold()}
    sys.__stderr__.write("GC " + json.dumps(state) + "\\n")
atexit.register(report)
sys.argv = ["roost", *sys.argv[1:]]
runpy.run_module("bridge.cli.main", run_name="__main__")
"""


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    return env | {
        "ROOST_HOME": str(home),
        "ROOST_CONFIG": os.environ["ROOST_CONFIG"],
        "ROOST_LLM__BASE_URL": "http://127.0.0.1:9/v1",  # nobody listens: never called
        "ROOST_LLM__MODEL": "m1",
        "ROOST_LLM__API_KEY": "sk-test-key-000000000000",
        "ROOST_WEB__PORT": "0",
    }


def state_in(stderr: bytes) -> dict[str, object]:
    [line] = [x for x in stderr.decode().splitlines() if x.startswith("GC ")]
    found: dict[str, object] = json.loads(line.removeprefix("GC "))
    return found


async def probe(args: list[str], home: Path, ready: bytes | None = None) -> dict[str, object]:
    """Run `roost ARGS` under the probe; with `ready`, stop it (SIGTERM) once a line of its
    output starts with it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        PROBE,
        *args,
        env=environment(home),
        cwd=REPO,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    if ready is not None:
        async with asyncio.timeout(HANG_S):  # a safety net against a hang, not a speed check
            while not (await proc.stdout.readline()).startswith(ready):
                assert proc.returncode is None
        proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert proc.returncode == 0, err.decode()[-2000:]
    return state_in(err)


@pytest.mark.parametrize(
    "args",
    [["send", "/help"], ["access", "list"]],
    ids=["send", "access"],
)
async def test_a_command_starts_without_a_full_collection_and_freezes_its_start_up(
    args: list[str], home: Path
) -> None:
    state = await probe(args, home)
    runs = state["runs"]
    assert isinstance(runs, list) and runs[2] == 0  # no full collection (one before)
    assert isinstance(state["frozen"], int) and state["frozen"] > 10_000  # modules and all
    assert state["on"] is True  # collecting again for the command's own work


async def test_serve_collects_again_once_ready(home: Path) -> None:
    state = await probe(["serve"], home, ready=b"roost: model")
    assert state["on"] is True
    assert isinstance(state["frozen"], int) and state["frozen"] > 10_000
    # the young generation collected every 5,000 allocations, the older ones as Python does
    assert state["threshold"] == [collector.YOUNG_THRESHOLD, *gc.get_threshold()[1:]]
    assert gc.get_threshold()[0] < collector.YOUNG_THRESHOLD


def test_main_embedded_with_arguments_leaves_the_collector_alone(home: Path) -> None:
    frozen = gc.get_freeze_count()
    assert main(["access", "list"]) == 0
    assert gc.isenabled()
    # nothing frozen (a freeze adds every object, > 10,000); the count may fall: the suite
    # froze what its collection left (tests/conftest.py), and a frozen object freed leaves it
    assert gc.get_freeze_count() <= frozen


def test_resume_does_nothing_when_the_collector_is_on() -> None:
    frozen, threshold = gc.get_freeze_count(), gc.get_threshold()
    collector.resume()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    assert gc.get_threshold() == threshold
