"""A helper that exits is reaped by asyncio's child watcher alone, so its exit status
is kept and nothing is logged: `HelperProcess.kill` signals through a pidfd, where
the transport's `kill` (`Popen.send_signal`) polls first and reaped a helper that had
just exited under the watcher ("Unknown child process pid …, will report returncode
255" in the daemon's log at every helper a tenant beyond `max_helpers` let go)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from forge.runner import SandboxRunner
from tests.forge.helpers import tool
from tests.waits import HANG_S

pytestmark = pytest.mark.asyncio

QUICK = tool("return n + 1", params="n: int")
TENANTS = 40  # each past the first lets a helper go (max_helpers=1)


async def test_helpers_let_go_are_reaped_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runner = SandboxRunner(default_timeout_s=HANG_S, max_helpers=1)
    await runner.start()
    try:
        with caplog.at_level(logging.WARNING, logger="asyncio"):
            for i in range(TENANTS):
                ws = tmp_path / f"tenant{i}"
                ws.mkdir()
                res = await runner.run(QUICK, {"n": i}, ws)
                assert res.ok and res.result == i + 1, res
    finally:
        await runner.aclose()
    unknown = [r.getMessage() for r in caplog.records if "Unknown child" in r.getMessage()]
    assert unknown == []
