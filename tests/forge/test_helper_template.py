"""Helpers forked from the runner's template (forge.template, forge.helper_fork).

The runner's first helper is exec'd; the next ones are forked from a template
that imported the helper's code once. Each forked helper must be what an exec'd
one is: its tenant's alone (no descriptor of another helper or of the template,
an empty environment, cwd `/`), seen when it dies, replaced when it is killed.
A template that fails costs an exec'd helper, never a call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

import forge.helper_fork
from bridge.app.build import build
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from forge.runner import TEMPLATE_TRIES, SandboxRunner
from tests.conftest import Clock, ScriptedBackend
from tests.forge.helpers import children_of, descriptors, parent_of, tool
from tests.waits import HANG_S, until

pytestmark = pytest.mark.asyncio(loop_scope="function")
DOUBLE = tool("return 2 * n", params="n: int")
WHERE = tool("import os\nreturn os.getcwd()")
BUSY = tool("open('started', 'w').write('x')\nwhile True:\n    pass")


def channels(pid: int) -> set[str]:
    """The pipes and sockets `pid` holds, by inode: shared only if both ends see one."""
    return {v for v in descriptors(pid).values() if v.startswith(("pipe:", "socket:"))}


def gone(pid: int) -> bool:
    """Whether `pid` has exited (a zombie counts: its parent may be init)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def reaped(pid: int) -> bool:
    """Whether `pid` exited and its parent has waited for it (no zombie left)."""
    return not os.path.exists(f"/proc/{pid}")


@pytest_asyncio.fixture
async def runner() -> AsyncIterator[SandboxRunner]:
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    yield r
    await r.aclose()


async def call(r: SandboxRunner, ws: Path, n: int) -> int:
    os.makedirs(ws, exist_ok=True)
    res = await r.run(DOUBLE, {"n": n}, ws)
    assert res.ok, res.error_message
    return int(res.result)


async def test_later_helpers_are_forked_and_hold_nothing_of_another(
    runner: SandboxRunner, tmp_path: Path
) -> None:
    tenants = [tmp_path / name for name in ("alice", "bob", "carol")]
    for i, ws in enumerate(tenants):
        assert await call(runner, ws, i) == 2 * i
    # the next spare runs: no fork is in flight (the template holds its descriptors then)
    await until(lambda: runner.spare_pid() is not None, "the next spare runs")
    pids = [runner.helper_pid(ws) for ws in tenants]
    template = runner.template_pid()
    assert template is not None and all(pid is not None for pid in pids)
    assert parent_of(pids[0]) == os.getpid()  # the first one is exec'd
    assert [parent_of(p) for p in pids[1:]] == [template, template]  # type: ignore[arg-type]
    assert runner.helpers_forked() >= 2
    # the template holds its control socket and /dev/null, nothing of a helper
    held = descriptors(template)
    control = [v for fd, v in held.items() if fd > 2]
    assert [held[fd] for fd in (0, 1, 2)] == ["/dev/null"] * 3
    assert len(control) == 1 and control[0].startswith("socket:")
    # no helper holds a pipe or socket of another helper, or the template's socket
    for pid in pids[1:]:
        assert pid is not None
        others = set().union(*(channels(p) for p in pids if p not in (pid, None)))
        assert not channels(pid) & others
        assert control[0] not in channels(pid)
        own = descriptors(pid)  # its stdin and stdout once: the template's copies closed
        assert [fd for fd, v in own.items() if v in (own[0], own[1])] == [0, 1]
        assert _environ(pid) == b""
        assert os.readlink(f"/proc/{pid}/cwd") == "/"
    # each tenant's calls run in its own helper, in its own workspace
    for ws in tenants:
        res = await runner.run(WHERE, {}, ws)
        assert res.ok and Path(res.result).name == ws.name


async def test_a_killed_forked_helper_is_seen_and_replaced(
    runner: SandboxRunner, tmp_path: Path
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    await call(runner, first, 1)
    await call(runner, second, 2)
    pid = runner.helper_pid(second)
    assert pid is not None and parent_of(pid) == runner.template_pid()
    pending = asyncio.create_task(runner.run(BUSY, {}, second))
    await until(lambda: (second / "started").exists(), "the call runs")
    os.kill(pid, signal.SIGKILL)
    res = await asyncio.wait_for(pending, HANG_S)
    assert res.error_kind == "runtime" and "helper" in res.error_message
    await until(lambda: reaped(pid), "the killed helper is reaped by the template")
    assert await call(runner, second, 3) == 6
    again = runner.helper_pid(second)
    assert again not in (None, pid) and parent_of(again) == runner.template_pid()  # type: ignore[arg-type]


async def test_a_killed_template_is_started_again(runner: SandboxRunner, tmp_path: Path) -> None:
    await call(runner, tmp_path / "a", 1)
    await call(runner, tmp_path / "b", 1)
    old = runner.template_pid()
    assert old is not None
    survivor = runner.helper_pid(tmp_path / "b")
    os.kill(old, signal.SIGKILL)
    await until(lambda: runner.template_pid() != old, "the runner sees its template die")
    for name in ("c", "d", "e"):
        assert await call(runner, tmp_path / name, 5) == 10
    new = runner.template_pid()
    assert new not in (None, old)
    assert parent_of(runner.helper_pid(tmp_path / "e")) == new  # type: ignore[arg-type]
    # a helper forked by the dead template runs on (init reaps it later)
    assert await call(runner, tmp_path / "b", 4) == 8
    assert runner.helper_pid(tmp_path / "b") == survivor


async def test_a_stopped_template_costs_one_exec_and_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forge.helper_fork, "TEMPLATE_ANSWER_S", 0.5)
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    try:
        await call(r, tmp_path / "a", 1)
        await call(r, tmp_path / "b", 1)  # the next spare is forked as this call is served
        stopped = r.template_pid()
        assert stopped is not None
        await until(lambda: r.spare_pid() is not None, "the next spare runs")
        os.kill(stopped, signal.SIGSTOP)
        assert await call(r, tmp_path / "c", 2) == 4  # takes the spare; the next one waits
        await until(lambda: r.spare_pid() is not None, "a spare runs again")
        assert parent_of(r.spare_pid()) == os.getpid()  # type: ignore[arg-type]
        assert reaped(stopped)  # killed, waited for
        assert await call(r, tmp_path / "d", 3) == 6
        await until(lambda: r.spare_pid() is not None, "a third spare runs")
        assert r.template_pid() not in (None, stopped)
        assert parent_of(r.spare_pid()) == r.template_pid()  # type: ignore[arg-type]
    finally:
        await r.aclose()


async def test_a_template_that_fails_costs_an_exec_never_a_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(forge.helper_fork, "template_boot", lambda: "import sys; sys.exit(3)")
    r = SandboxRunner(default_timeout_s=HANG_S)
    with caplog.at_level(logging.WARNING, logger="forge.runner"):
        await r.start()
        try:
            for i in range(TEMPLATE_TRIES + 2):
                assert await call(r, tmp_path / f"t{i}", i) == 2 * i
                assert parent_of(r.helper_pid(tmp_path / f"t{i}")) == os.getpid()  # type: ignore[arg-type]
            assert r.template_pid() is None and r.helpers_forked() == 0
            assert not r.fork_helpers
        finally:
            await r.aclose()
    said = [rec.getMessage() for rec in caplog.records if rec.name == "forge.runner"]
    assert sum("the helper template did not start" in m for m in said) == TEMPLATE_TRIES
    assert sum("exec'd from now on" in m for m in said) == 1


async def test_without_fork_helpers_every_helper_is_execd(tmp_path: Path) -> None:
    r = SandboxRunner(default_timeout_s=HANG_S, fork_helpers=False)
    await r.start()
    try:
        for name in ("a", "b", "c"):
            await call(r, tmp_path / name, 1)
            assert parent_of(r.helper_pid(tmp_path / name)) == os.getpid()  # type: ignore[arg-type]
        assert r.template_pid() is None and r.helpers_forked() == 0
    finally:
        await r.aclose()


async def test_close_ends_the_template_and_its_helpers(tmp_path: Path) -> None:
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    for name in ("a", "b", "c"):
        await call(r, tmp_path / name, 1)
    template = r.template_pid()
    forked = [r.helper_pid(tmp_path / n) for n in ("b", "c")]
    assert template is not None and None not in forked
    await r.aclose()
    assert reaped(template) and not children_of(template)
    await until(lambda: all(gone(p) for p in forked), "the forked helpers exit")  # type: ignore[arg-type]


async def test_a_fork_cancelled_while_it_waits_leaves_no_answer_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The answer of a cancelled request could come later and be read by the next
    request as its own (another helper's pid): that template serves no more."""
    waiting = asyncio.Event()
    receive = forge.helper_fork._recv_fds

    async def noted(sock: socket.socket) -> tuple[bytes, list[int]]:
        waiting.set()
        return await receive(sock)

    monkeypatch.setattr(forge.helper_fork, "_recv_fds", noted)
    template = forge.helper_fork.HelperTemplate(sys.executable)
    try:
        fork = forge.helper_fork.fork_helper
        first, _ = await asyncio.wait_for(fork(template, [], 1 << 20), HANG_S)
        pidfd = getattr(first.transport, "pidfd", -1)
        assert pidfd >= 0 and not os.get_inheritable(pidfd)  # no exec'd child inherits it
        first.close()
        old = template.pid()
        assert old is not None
        os.kill(old, signal.SIGSTOP)  # it will not answer the next request in time
        waiting.clear()
        pending = asyncio.create_task(fork(template, [], 1 << 20))
        await asyncio.wait_for(waiting.wait(), HANG_S)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        with contextlib.suppress(ProcessLookupError):  # killed and reaped already, as it should
            os.kill(old, signal.SIGCONT)  # (were it not, it would answer the cancelled request)
        helper, hello = await asyncio.wait_for(fork(template, [], 1 << 20), HANG_S)
        assert template.starts == 2 and template.pid() not in (None, old)
        assert hello.pid == helper.pid() and parent_of(hello.pid) == template.pid()
        await helper.shut()
        assert reaped(old)
    finally:
        await template.aclose()


async def test_the_template_refuses_a_bad_request(tmp_path: Path) -> None:
    template = forge.helper_fork.HelperTemplate(sys.executable)
    r, w = os.pipe()
    try:
        with pytest.raises(forge.helper_fork.TemplateError, match="descriptors"):
            await asyncio.wait_for(template.fork([], [r]), HANG_S)
        assert template.starts == 1 and not template.running()
    finally:
        os.close(r)
        os.close(w)
        await template.aclose()


def _environ(pid: int) -> bytes:
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read()


@pytest.mark.usefixtures("home")
async def test_the_setting_reaches_the_daemon_runner(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[forge] fork_helpers` (here through its environment spelling), on by default."""
    assert load_settings().forge.fork_helpers is True
    for value, expected in (("false", False), ("true", True)):
        monkeypatch.setenv("ROOST_FORGE__FORK_HELPERS", value)
        made = await build(
            load_settings(), backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock
        )
        try:
            assert made.runner.fork_helpers is expected
        finally:
            await made.aclose()
