"""`roost serve` starts its spare sandbox helper right after it is ready, never before.

The helper's start-up (a process of its own that probes the machine) is not on
the way to the ready line, and it is never dropped: once the daemon is ready the
spare runs, so a new tenant's first tool call does not wait for a helper's
start-up. A helper that cannot start is logged, and the daemon goes on serving.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import pytest

from bridge.app.build import Roost
from bridge.app.serve import CHANNELS, ChannelRow, Launched, serve
from bridge.core.config import Settings, load_settings
from forge.runner import SandboxRunner
from tests.waits import HANG_S, until


class Quiet:
    """A channel that does nothing: the test reaches the roost through its row."""

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


def roost_row(roosts: list[Roost]) -> ChannelRow:
    def factory(settings: Settings, roost: Roost, made: Mapping[str, Launched]) -> Launched:
        roosts.append(roost)
        return Launched(Quiet(), lambda: "roost: quiet channel ready")

    return ChannelRow("quiet", lambda settings: True, factory)


async def serving(home: Path, body: Callable[[Roost, int | None], Awaitable[None]]) -> None:
    """Run `serve()` with the offline model, `body(roost, the spare's pid at the ready
    callback)` once it is ready; it must still run then. Stopped with SIGTERM (exit 0)."""
    settings = load_settings(home=home, web={"enabled": False}, llm={"provider": "offline"})
    roosts: list[Roost] = []
    at_ready: list[int | None] = []
    ready = asyncio.Event()

    def on_ready(port: int) -> None:
        at_ready.append(roosts[0].runner.spare_pid())
        ready.set()

    task = asyncio.create_task(
        serve(settings, ready=on_ready, channels=(*CHANNELS, roost_row(roosts)))
    )

    async def then() -> None:
        await body(roosts[0], at_ready[0])
        assert not task.done(), "serve() ended on its own"

    await served_until(task, ready, then)


async def served_until(
    task: asyncio.Task[int], event: asyncio.Event, then: Callable[[], Awaitable[None]]
) -> None:
    """Once `event` is set (serve's ready callback, or a step after it), `then()`; then
    `serve()` (`task`) is stopped as SIGTERM stops it, and it must exit 0."""
    waiting = asyncio.create_task(event.wait())
    try:
        await asyncio.wait({waiting, task}, timeout=HANG_S, return_when=asyncio.FIRST_COMPLETED)
        assert event.is_set(), f"serve() ended before it was ready: {task}"
        await then()
    finally:
        if event.is_set():  # serve's own SIGTERM handler is installed: a real stop
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            waiting.cancel()
            task.cancel()
    assert await asyncio.wait_for(task, HANG_S) == 0


async def test_the_spare_helper_starts_after_the_ready_line_and_then_runs(home: Path) -> None:
    async def body(roost: Roost, spare_at_ready: int | None) -> None:
        assert spare_at_ready is None, "the helper's start-up was on the way to ready"
        await until(lambda: roost.runner.spare_pid() is not None, "the spare helper running")
        pid = roost.runner.spare_pid()
        assert pid is not None
        os.kill(pid, 0)  # a live process

    await serving(home, body)


async def test_a_helper_that_cannot_start_is_logged_and_the_daemon_goes_on(
    home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(self: SandboxRunner) -> None:
        raise RuntimeError("sandbox helper failed to start")

    monkeypatch.setattr(SandboxRunner, "start", broken)
    caplog.set_level(logging.ERROR, logger="roost")

    def logged() -> bool:
        return any("the sandbox helper failed to start" in r.getMessage() for r in caplog.records)

    async def body(roost: Roost, spare_at_ready: int | None) -> None:
        await until(logged, "the failed start logged")

    await serving(home, body)
