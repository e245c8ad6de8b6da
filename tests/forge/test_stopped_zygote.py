"""A helper whose zygote is stopped (SIGSTOP: a debugger, a frozen cgroup, a stuck
process) never hangs a call (forge.worker, forge.child_pool).

A call a waiting child can take is served without the zygote; when a call finds
no child waiting while the zygote stays silent for forge.worker.ZYGOTE_WAIT_S (here 1 s),
that helper retires and gives the call back (no child took it): the runner runs
it in a new helper with a new zygote, as it does every later call (before, such
a call hung until the runner's deadline, here HANG_S); given back by that helper
too, it fails and no third helper is tried. A call killed at its
deadline is answered without the zygote's exit report; one whose child died by
itself, whose exit status only the zygote can report, fails after that bound
too. A zygote stopped and continued serves again.
A tool with the process layers only (no restricted Python) returns its pid, so a
test knows which children ran its calls: each runs in its own child, forked
before the stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from forge.broker import Broker
from forge.child_pool import IDLE_CHILDREN
from forge.helper_process import HelperProcess, Unserved
from forge.layers import Layers
from forge.protocol.calls import Hello, Reply, retire_frame
from forge.runner import UNSERVED, RunResult, SandboxRunner
from tests.forge.helpers import children_of
from tests.waits import HANG_S, until

pytestmark = pytest.mark.asyncio(loop_scope="module")

PID = '''
import os

def run() -> int:
    """This call's process."""
    return os.getpid()
'''

CRASHES = '''
import ctypes

def run() -> int:
    """Dies of SIGSEGV before it sends any result."""
    return ctypes.string_at(0)
'''

SPINS = '''
def run() -> int:
    """Never returns: killed at its deadline."""
    while True:
        pass
'''


# the zygote's silence that retires its helper, here (forge.worker.ZYGOTE_WAIT_S, 3 s, in
# production): a fork or a reaping takes milliseconds even at load 20, so 1 s is still a
# wide margin, and each retirement below waits 2 s less
ZYGOTE_WAIT_S = 1.0


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def raw_python() -> AsyncIterator[SandboxRunner]:
    """Plain Python in the sandbox (the other layers on), its zygotes' silence bounded
    by `ZYGOTE_WAIT_S`."""
    r = SandboxRunner(
        default_timeout_s=HANG_S,
        layers_for_tests=Layers(lint=False, restricted=False),
        zygote_wait_s=ZYGOTE_WAIT_S,
    )
    await r.start()
    yield r
    await r.aclose()


def gone(pid: int) -> bool:
    """Whether `pid` has exited (a zombie counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@contextlib.contextmanager
def stopped(pid: int) -> Iterator[None]:
    """`pid` under SIGSTOP, continued afterwards whatever happens."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def in_workspace(pid: int, ws: Path) -> bool:
    """Whether `pid` waits confined to `ws` (it moved into it: forge.zygote's binding)."""
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd")) == ws.resolve()
    except OSError:
        return False


async def ready(r: SandboxRunner, ws: Path) -> tuple[int, int, set[int]]:
    """After one call in `ws`: its helper, its zygote, and the children forked after
    that call's child (`IDLE_CHILDREN` of them), each confined to `ws` while it
    waits (the children forked before the first call are killed once the first
    confined one arrives, forge.child_pool `lend`: they are not counted). The zygote
    forks one child at a time and hands each over before the next fork, so all but
    the last of them have reached the helper when all are seen."""
    first = await r.run(PID, {}, ws)
    assert first.ok, first
    helper, zygote = r.helper_pid(ws), r.zygote_pid(ws)
    assert helper is not None and zygote is not None

    def waiting() -> set[int]:
        return set(children_of(zygote)) - {first.result}

    def settled() -> bool:
        now = waiting()
        return len(now) == IDLE_CHILDREN and all(in_workspace(pid, ws) for pid in now)

    await until(settled, "the children forked ahead, confined to the workspace")
    return helper, zygote, waiting()


async def until_retired(
    r: SandboxRunner, ws: Path, helper: int, timeout_s: float | None = None
) -> list[RunResult]:
    """Run calls (each `timeout_s`) until `helper` no longer serves `ws`; their results."""
    deadline = time.monotonic() + HANG_S
    results: list[RunResult] = []
    while r.helper_pid(ws) == helper:
        results.append(await r.run(PID, {}, ws, timeout_s=timeout_s))
        assert time.monotonic() < deadline, f"the helper never retired ({results[-1]})"
    return results


async def served_anew(r: SandboxRunner, ws: Path, retired: int) -> None:
    """The next call runs, in a new helper (not the `retired` one)."""
    again = await r.run(PID, {}, ws)
    assert again.ok, again
    assert r.helper_pid(ws) not in (None, retired)


async def killed(children: Iterable[int]) -> None:
    """SIGKILL waiting children and wait until they are dead (a child handed a call
    before its SIGKILL landed would fail that call another way)."""
    pids = list(children)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    await until(lambda: all(gone(pid) for pid in pids), "the waiting children die")


async def test_calls_are_served_by_waiting_children_while_the_zygote_is_stopped(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    helper, zygote, waiting = await ready(raw_python, workspace)
    with stopped(zygote):
        pids = []
        for _ in range(IDLE_CHILDREN - 1):
            res = await raw_python.run(PID, {}, workspace)
            assert res.ok, res
            pids.append(res.result)
        assert len(set(pids)) == len(pids) and set(pids) <= waiting  # one call each
        assert raw_python.helper_pid(workspace) == helper


async def test_with_no_child_waiting_a_silent_zygote_retires_its_helper_and_the_call_runs_anew(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    helper, zygote, waiting = await ready(raw_python, workspace)
    with stopped(zygote):
        served: list[int] = []
        for _ in range(IDLE_CHILDREN + 1):  # one more call than children were forked
            res = await raw_python.run(PID, {}, workspace)
            assert res.ok, res
            served.append(res.result)
            if raw_python.helper_pid(workspace) != helper:
                break
        assert raw_python.helper_pid(workspace) not in (None, helper), "no new helper"
        assert raw_python.zygote_pid(workspace) not in (None, zygote)
        assert set(served[:-1]) <= waiting  # the waiting children took the calls before
        assert served[-1] not in waiting  # the one no child took ran in the new helper
    await until(
        lambda: all(gone(pid) for pid in (helper, zygote, *waiting)),
        "the retired helper, its zygote and its children exit",
    )


async def test_a_call_killed_at_its_deadline_needs_no_exit_report(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    helper, zygote, _ = await ready(raw_python, workspace)
    with stopped(zygote):
        res = await raw_python.run(SPINS, {}, workspace, timeout_s=0.5)
        assert res.error_kind == "timeout" and res.error_message.endswith("was killed"), res
        assert raw_python.helper_pid(workspace) == helper  # its helper killed it, not the runner


async def test_a_zygote_stopped_then_continued_serves_again(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    helper, zygote, waiting = await ready(raw_python, workspace)
    with stopped(zygote):
        res = await raw_python.run(PID, {}, workspace)
        assert res.ok and res.result in waiting, res
    await until(
        lambda: set(children_of(zygote)) - waiting, "the continued zygote forks the child asked for"
    )
    pids = set()
    for _ in range(2 * IDLE_CHILDREN):  # more than were waiting: the zygote forks again
        res = await raw_python.run(PID, {}, workspace)
        assert res.ok, res
        pids.add(res.result)
    assert len(pids) == 2 * IDLE_CHILDREN and pids - waiting
    assert (raw_python.helper_pid(workspace), raw_python.zygote_pid(workspace)) == (helper, zygote)


async def test_a_crash_whose_exit_status_never_comes_fails_and_its_helper_retires(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    helper, zygote, _ = await ready(raw_python, workspace)
    with stopped(zygote):
        res = await raw_python.run(CRASHES, {}, workspace)
        assert res.error_kind == "runtime", res
        assert "exit status never came" in res.error_message, res
        await served_anew(raw_python, workspace, helper)


async def test_calls_shorter_than_the_bound_still_retire_a_silent_zygotes_helper(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    """The zygote's silence counts from when it first owed a child, not from each
    call: calls that give up before ZYGOTE_WAIT_S do not keep a stuck helper."""
    helper, zygote, _ = await ready(raw_python, workspace)
    with stopped(zygote):
        results = await until_retired(raw_python, workspace, helper, timeout_s=0.2)
        kinds = {res.error_kind for res in results}
        assert kinds <= {None, "runtime"}, kinds  # served by a child, or gave up waiting
        await served_anew(raw_python, workspace, helper)


async def test_a_short_call_no_child_took_says_its_tool_never_started(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    """A call whose own timeout ends before ZYGOTE_WAIT_S finds no child (the zygote
    stopped, its waiting children killed): it fails saying that its tool never
    started, not as a tool that ran too long."""
    helper, zygote, waiting = await ready(raw_python, workspace)
    with stopped(zygote):
        await killed(waiting)
        results = await until_retired(raw_python, workspace, helper, timeout_s=0.2)
    failures = [res for res in results if not res.ok]
    assert failures, "every call was served"  # the first one at least waited 0.2 s in vain
    for res in failures:
        assert res.error_kind == "runtime", res
        assert res.error_message.startswith("the tool did not start"), res
        assert "nothing of it ran" in res.error_message, res


async def test_a_retiring_helper_gives_back_only_the_calls_no_child_took() -> None:
    """The runner's side of `RETIRE`: the calls it names end with `Unserved` (the runner
    runs them again in a new helper), a call a child took waits for its own reply, and
    the helper takes no new call."""
    helper = HelperProcess(1 << 20)
    helper.hello.set_result(Hello(1, 2, {}))
    loop = asyncio.get_running_loop()
    given, running = loop.create_future(), loop.create_future()
    helper.expect(5, given, b"t" * 16)
    helper.expect(6, running, b"")
    helper.pipe_data_received(1, retire_frame([5, "6", 99]))  # "6": not an id, ignored
    assert helper.dead
    with pytest.raises(Unserved):
        given.result()
    assert not running.done() and 5 not in helper.tokens


async def spare_ready(r: SandboxRunner) -> tuple[int, int, list[int]]:
    """The spare helper (the next new workspace's), its zygote and its waiting
    children, once they are all there."""
    await until(lambda: r.spare_pid() is not None, "the spare helper runs")
    helper = r.spare_pid()
    assert helper is not None
    await until(lambda: children_of(helper), "the spare's zygote")
    (zygote,) = children_of(helper)  # the helper forks nothing else
    await until(lambda: len(children_of(zygote)) == IDLE_CHILDREN, "the spare's children")
    return helper, zygote, children_of(zygote)


async def test_a_call_given_back_twice_fails_and_no_third_helper_is_tried(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    """The helper a given-back call runs in next (the spare) has a stopped zygote and
    no child either: the call fails with UNSERVED, the next spare stays untouched,
    and once the zygotes are continued the next call runs (in that spare)."""
    helper, zygote, _ = await ready(raw_python, workspace)
    second, second_zygote, second_children = await spare_ready(raw_python)
    with stopped(zygote), stopped(second_zygote):
        await killed(second_children)  # the second helper has no child for the call
        res = (await until_retired(raw_python, workspace, helper))[-1]
        assert res.error_kind == "runtime" and res.error_message == UNSERVED, res
        assert raw_python.helper_pid(workspace) == second  # it ran there, and only there
        await until(lambda: raw_python.spare_pid() is not None, "the next spare runs")
        third = raw_python.spare_pid()  # started when the second was taken
        assert third not in (helper, second)
    res = await raw_python.run(PID, {}, workspace)
    assert res.ok, res
    assert raw_python.helper_pid(workspace) == third
    await until(lambda: gone(second), "the second helper exits")


class _GivesBack(HelperProcess):
    """A helper with no process: it gives its call back, as a retiring helper does
    (`give_back`), or answers it; it notes the call's `net` deadline as the call
    reaches it."""

    def __init__(self, give_back: bool, runner: SandboxRunner, seen: list[float]) -> None:
        super().__init__(1 << 20)
        self.hello.set_result(Hello(1, 2, {}))
        self._give_back, self._runner, self._seen = give_back, runner, seen

    async def send(self, data: bytes) -> None:
        (call_id,) = self.pending
        self._seen.append(self._runner._net[call_id].deadline)
        if self._give_back:
            self.pending[call_id].set_exception(Unserved(call_id))
        else:
            self.pending[call_id].set_result(Reply(call_id, True, 42))


async def test_a_given_back_call_runs_again_with_its_whole_time_for_net_requests(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing of a given-back call ran: in the new helper it gets its whole time
    again, and so do its `net` requests (before, their deadline still counted from the
    first attempt, a retirement's wait of ZYGOTE_WAIT_S and more already spent)."""
    runner = SandboxRunner(default_timeout_s=5.0, broker=Broker())
    seen: list[float] = []
    helpers = iter([_GivesBack(True, runner, seen), _GivesBack(False, runner, seen)])

    async def get(key: str) -> HelperProcess:
        return next(helpers)

    monkeypatch.setattr(runner._pool, "get", get)
    before = time.monotonic()
    res = await runner.run(PID, {}, workspace)
    assert res.ok and res.result == 42, res
    first, again = seen
    assert before + 5.0 <= first < again  # counted afresh when it ran again
    await runner.aclose()
