"""`[forge] spare_helper`: by default `roost serve` starts its spare sandbox helper at its
ready line; set to false (a daemon that never runs a tool, the test suite's), it starts
none, and the sandbox runner is not even made until a tool call needs it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

import bridge.app.serve as serve_module
from bridge.app.build import Roost
from bridge.app.serve import CHANNELS, serve
from bridge.core.config import load_settings
from tests.spine.test_serve_sandbox import roost_row, served_until


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
    made: list[bool] = []

    async def look() -> None:
        made.append(roosts[0].runner.made)

    await served_until(task, screens_done, look)
    return len(asked), made[0]


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
