"""`[forge] spare_helper`: by default `roost serve` starts its spare sandbox helper at its
ready line; set to false (a daemon that never runs a tool, the test suite's), it starts
none, and the sandbox runner is not even made until a tool call needs it.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

import bridge.app.serve as serve_module
from bridge.app.build import Roost
from bridge.app.serve import CHANNELS, serve
from bridge.core.config import load_settings
from tests.spine.test_serve_sandbox import roost_row
from tests.waits import HANG_S


async def started_spares(
    home: Path, monkeypatch: pytest.MonkeyPatch, **forge: object
) -> tuple[int, bool]:
    """Serve `home` until the screens' preparation (started right after the spare's start,
    in the same step) has run: how many spare starts were asked for, and whether the
    roost's sandbox runner was made by then."""
    asked: list[object] = []
    screens_done = asyncio.Event()

    def start_sandbox(runner: object) -> Coroutine[Any, Any, None]:
        asked.append(runner)
        return asyncio.sleep(0)

    async def prepare_screens() -> None:
        screens_done.set()

    monkeypatch.setattr(serve_module, "start_sandbox", start_sandbox)
    monkeypatch.setattr(serve_module, "prepare_screens", prepare_screens)
    settings = load_settings(
        home=home, web={"enabled": False}, llm={"provider": "offline"}, forge=forge
    )
    roosts: list[Roost] = []
    task = asyncio.create_task(serve(settings, channels=(*CHANNELS, roost_row(roosts))))
    waiting = asyncio.create_task(screens_done.wait())
    try:
        await asyncio.wait({waiting, task}, timeout=HANG_S, return_when=asyncio.FIRST_COMPLETED)
        assert screens_done.is_set(), f"serve() ended before it was ready: {task}"
        made = roosts[0].runner.made
    finally:
        if screens_done.is_set():  # serve's own SIGTERM handler is installed: a real stop
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            waiting.cancel()
            task.cancel()
    assert await asyncio.wait_for(task, HANG_S) == 0
    return len(asked), made


async def test_by_default_serve_starts_the_spare_helper(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked, _ = await started_spares(home, monkeypatch)
    assert asked == 1


async def test_with_spare_helper_false_serve_starts_none_and_makes_no_runner(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked, made = await started_spares(home, monkeypatch, spare_helper=False)
    assert asked == 0
    assert not made, "the sandbox runner was made though no tool ran"


def test_the_setting_is_on_unless_the_file_or_environment_says_false(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings().forge.spare_helper is True
    Path(os.environ["ROOST_CONFIG"]).write_text("[forge]\nspare_helper = false\n")
    assert load_settings().forge.spare_helper is False
    Path(os.environ["ROOST_CONFIG"]).write_text("")
    monkeypatch.setenv("ROOST_FORGE__SPARE_HELPER", "false")
    assert load_settings().forge.spare_helper is False
