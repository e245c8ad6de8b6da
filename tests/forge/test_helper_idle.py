"""Idle helpers close (`[forge] helper_idle_s`, issue 26 item 7): a workspace's
helper, with its zygote and waiting children, goes away after `idle_s` without
a call, never while a call runs; the next call starts a new one. The clock and
the reaper's wait are injected: the test moves the time and waits for the
reaper's next check, never for a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bridge.app.build import build
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from forge.runner import SandboxRunner
from tests.conftest import Clock, ScriptedBackend
from tests.forge.helpers import children_of, tool
from tests.procs import gone
from tests.waits import HANG_S, until

pytestmark = pytest.mark.asyncio(loop_scope="function")
IDLE_S = 300.0
QUICK = tool("return n + 1", params="n: int")
# Runs until the test writes `go` into its workspace; `started` says it runs.
WAITS = tool(
    "with open('started', 'w') as f:\n"
    "    f.write('1')\n"
    "while True:\n"
    "    try:\n"
    "        with open('go') as f:\n"
    "            return f.read()\n"
    "    except OSError:\n"
    "        pass"
)


class FakeTime:
    """A clock the test moves, and the reaper's wait, which ends when it moves."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.checks = 0  # reaper waits begun: each one follows a finished check
        self.waiting = False
        self._go = asyncio.Event()

    def clock(self) -> float:
        return self.now

    async def tick(self, seconds: float) -> None:
        assert seconds > 0
        self.checks += 1
        self.waiting = True
        await self._go.wait()
        self._go.clear()
        self.waiting = False

    async def advance(self, seconds: float) -> None:
        """Move the clock, let the reaper check once, and wait until it has."""
        await until(lambda: self.waiting, "the reaper waiting")
        seen = self.checks
        self.now += seconds
        self._go.set()
        await until(lambda: self.checks > seen, "the reaper's check")


@pytest_asyncio.fixture
async def timed() -> AsyncIterator[tuple[SandboxRunner, FakeTime]]:
    time = FakeTime()
    runner = SandboxRunner(
        default_timeout_s=HANG_S, helper_idle_s=IDLE_S, clock=time.clock, tick=time.tick
    )
    await runner.start()
    yield runner, time
    await runner.aclose()


async def test_idle_helper_closes_and_next_call_starts_a_new_one(
    timed: tuple[SandboxRunner, FakeTime], workspace: Path
) -> None:
    runner, time = timed
    assert (await runner.run(QUICK, {"n": 1}, workspace)).result == 2
    helper, zygote = runner.helper_pid(workspace), runner.zygote_pid(workspace)
    assert helper is not None and zygote is not None
    await time.advance(IDLE_S - 1)
    assert runner.helper_count() == 1 and runner.helper_pid(workspace) == helper
    assert not gone(helper) and not gone(zygote)
    await time.advance(1)
    assert runner.helper_count() == 0 and runner.helper_pid(workspace) is None
    await until(lambda: gone(helper) and gone(zygote), "the idle helper and its zygote exit")
    assert (await runner.run(QUICK, {"n": 2}, workspace)).result == 3
    again = runner.helper_pid(workspace)
    assert again is not None and again != helper and runner.helper_count() == 1


async def test_an_idle_helper_takes_its_waiting_children_with_it(
    timed: tuple[SandboxRunner, FakeTime], workspace: Path
) -> None:
    """The children forked ahead of demand (waiting for a call) go with their helper."""
    runner, time = timed
    assert (await runner.run(QUICK, {"n": 1}, workspace)).ok
    helper, zygote = runner.helper_pid(workspace), runner.zygote_pid(workspace)
    assert helper is not None and zygote is not None
    await until(lambda: len(children_of(zygote)) >= 2, "two children waiting for a call")
    waiting = children_of(zygote)
    await time.advance(IDLE_S)
    assert runner.helper_count() == 0
    await until(lambda: all(gone(pid) for pid in (helper, zygote, *waiting)), "all of them exit")


async def test_a_new_tenant_takes_the_running_spare_and_a_new_spare_starts(
    tmp_path: Path,
) -> None:
    """The first call of a new workspace needs no helper start-up when the spare runs:
    the workspace takes it, and the next spare starts in the background."""
    runner = SandboxRunner(default_timeout_s=HANG_S)
    spares: list[int | None] = []
    try:
        for name in ("alice", "bob", "carol"):
            await runner.start()  # waits until the spare runs
            spare = runner.spare_pid()
            assert spare is not None and spare not in spares
            spares.append(spare)
            ws = tmp_path / name
            ws.mkdir()
            assert (await runner.run(QUICK, {"n": 1}, ws)).ok
            assert runner.helper_pid(ws) == spare and runner.spare_pid() != spare
        assert runner.helper_count() == 3
        await runner.start()
        spares.append(runner.spare_pid())  # the fourth spare, shut with the runner
    finally:
        await runner.aclose()
    await runner.start()  # closed: starts nothing
    assert runner.spare_pid() is None
    await until(lambda: all(pid and gone(pid) for pid in spares), "every helper exits")


async def test_a_running_call_keeps_its_helper(
    timed: tuple[SandboxRunner, FakeTime], workspace: Path
) -> None:
    runner, time = timed
    call = asyncio.ensure_future(runner.run(WAITS, {}, workspace))
    await until(lambda: (workspace / "started").exists() or call.done(), "the call running")
    helper = runner.helper_pid(workspace)
    await time.advance(IDLE_S * 10)
    assert runner.helper_count() == 1 and runner.helper_pid(workspace) == helper
    # whole or not at all: the tool may open `go` between a write_text's create and write
    (workspace / "go.part").write_text("done")
    (workspace / "go.part").rename(workspace / "go")
    res = await asyncio.wait_for(call, HANG_S)
    assert res.ok and res.result == "done", res
    # the idle time counts from the call's end, not its start
    await time.advance(IDLE_S - 1)
    assert runner.helper_pid(workspace) == helper
    await time.advance(1)
    assert runner.helper_count() == 0


async def test_only_the_idle_tenant_loses_its_helper(
    timed: tuple[SandboxRunner, FakeTime], tmp_path: Path
) -> None:
    runner, time = timed
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    alice.mkdir()
    bob.mkdir()
    assert (await runner.run(QUICK, {"n": 1}, alice)).ok
    await time.advance(IDLE_S / 2)
    assert (await runner.run(QUICK, {"n": 1}, bob)).ok
    bobs = runner.helper_pid(bob)
    await time.advance(IDLE_S / 2)
    assert runner.helper_pid(alice) is None and runner.helper_pid(bob) == bobs
    assert runner.helper_count() == 1


async def test_no_idle_limit_keeps_helpers(workspace: Path) -> None:
    ticks: list[float] = []

    async def tick(seconds: float) -> None:
        ticks.append(seconds)

    runner = SandboxRunner(default_timeout_s=HANG_S, clock=lambda: 1e12, tick=tick)
    try:
        assert (await runner.run(QUICK, {"n": 1}, workspace)).ok
        assert runner.helper_count() == 1 and ticks == []  # no reaper runs at all
    finally:
        await runner.aclose()


async def test_the_configured_idle_time_reaches_the_daemon_runner(
    home: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[forge] helper_idle_s` (here through its environment spelling); 0: never."""
    assert load_settings().forge.helper_idle_s == 300
    for value, expected in (("42.5", 42.5), ("0", None)):
        monkeypatch.setenv("ROOST_FORGE__HELPER_IDLE_S", value)
        made = await build(
            load_settings(), backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock
        )
        try:
            assert made.runner.helper_idle_s == expected
        finally:
            await made.aclose()
