"""A call written into a lent child by the runner itself (forge.protocol.lending):
one hop fewer, and the same results, errors and limits as through the helper.

Each tool's first call in a helper goes through the helper (the runner does not
hold its code yet) and the next ones straight into a child the helper lent; a
traced runner shows which way a call went (`runner_handed`). Both ways must give
the same answer for a tool that loops past its timeout, prints too much, dies
mid-call or is fine; two callers get a child each; a helper whose zygote stops
retires with calls handed directly as before; and a lent child confined to a
workspace directory that was replaced is never handed a call.
"""

from __future__ import annotations

import array
import asyncio
import os
import signal
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from forge.child_pool import IDLE_CHILDREN
from forge.helper_process import CODE_BYTES, HelperProcess, lend_socket
from forge.layers import Layers
from forge.protocol.fields import load
from forge.protocol.frames import ProtocolError, unframe
from forge.protocol.lending import (
    HANDED_OP,
    decode_code,
    decode_lend,
    encode_code,
    encode_lend,
    handed_frame,
)
from forge.protocol.lending import MESSAGE_MAX as LEND_MESSAGE_MAX
from forge.runner import RunResult, SandboxRunner, _resolved
from tests.forge.helpers import children_of, descriptors, tool
from tests.forge.test_stopped_zygote import CRASHES, PID, stopped
from tests.procs import gone
from tests.waits import HANG_S, until

aio = pytest.mark.asyncio(loop_scope="module")

SPINS = tool("while True:\n    pass", "")
PRINTS = tool("for i in range(100000):\n    print('x' * 100)\nreturn 1", "")
ADDS = tool("return {'sum': a + b}", "a: int, b: int")
WRITES = tool("with open('out.txt', 'w') as f:\n    f.write(text)\nreturn text", "text: str")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def traced_raw() -> AsyncIterator[SandboxRunner]:
    """Plain Python in the sandbox (the process layers on), every call traced."""
    r = SandboxRunner(
        default_timeout_s=HANG_S, trace=True, layers_for_tests=Layers(lint=False, restricted=False)
    )
    await r.start()
    yield r
    await r.aclose()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def small() -> AsyncIterator[SandboxRunner]:
    """Restricted tools, traced, with a small output cap."""
    r = SandboxRunner(default_timeout_s=HANG_S, trace=True, max_output=4096)
    await r.start()
    yield r
    await r.aclose()


def handed(r: SandboxRunner) -> bool:
    """Whether the runner's last call was written into a lent child by the runner."""
    return "runner_handed" in r.stages()[-1]


async def both_ways(
    r: SandboxRunner, ws: Path, source: str, params: dict[str, object], **kw: object
) -> tuple[RunResult, RunResult]:
    """`source`'s first call (through the helper), then, once a child is lent, its
    next one (written into that child by the runner)."""
    first = await r.run(source, params, ws, **kw)  # type: ignore[arg-type]
    assert not handed(r), "a tool's first call goes through its helper"
    await until(lambda: r.lent_children(ws), "a child lent to the runner")
    second = await r.run(source, params, ws, **kw)  # type: ignore[arg-type]
    assert handed(r), "the next call goes straight into a lent child"
    return first, second


def same(a: RunResult, b: RunResult) -> None:
    assert (a.ok, a.result, a.error_kind, a.error_message, a.printed) == (
        b.ok,
        b.result,
        b.error_kind,
        b.error_message,
        b.printed,
    )


def test_lend_and_code_messages_round_trip() -> None:
    child = decode_lend(encode_lend(42, 3, 7, 9, "/w/\udcff"), [10, 11])
    assert (child.pid, child.generation, child.binding(), child.go, child.job) == (
        42,
        3,
        ("/w/\udcff", 7, 9),
        10,
        11,
    )
    for message, fds in ((b"L", [1, 2]), (encode_lend(1, 1, 0, 0, "/"), [1]),
                         (encode_lend(0, 1, 0, 0, "/"), [1, 2]),
                         (encode_lend(5, 0, 0, 0, "/"), [1, 2])):  # fmt: skip
        with pytest.raises(ProtocolError):
            decode_lend(message, fds)
    digest = bytes(range(32))
    assert decode_code(encode_code(digest, b"code")) == (digest, b"code")
    with pytest.raises(ProtocolError):
        decode_code(b"C" + digest)
    doc = unframe(handed_frame(5, 42, "ab", 1.5, 2.0, 100, True, (7,), busy=True))
    assert doc is not None
    assert load(doc) == {
        "op": HANDED_OP,
        "id": 5,
        "child": 42,
        "key": "ab",
        "at": 1.5,
        "timeout_s": 2.0,
        "max_output": 100,
        "trace": True,
        "drop": [7],
        "busy": True,
    }


def test_the_lending_socket_flows_one_way() -> None:
    mine, theirs = lend_socket()
    with mine, theirs:
        with pytest.raises(OSError):
            mine.send(b"x")  # nothing flows to the helper on it
        theirs.send(b"C" + bytes(33))
        assert mine.recv(64) == b"C" + bytes(33)
        assert mine.type == socket.SOCK_SEQPACKET


def test_the_runner_resolves_a_workspace_as_the_helper_does(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    link = tmp_path / "link"
    link.symlink_to(ws)
    st = ws.stat()
    assert _resolved(str(link)) == (os.path.realpath(ws), st.st_dev, st.st_ino)
    assert _resolved("relative/ws") is None  # the helper's cwd is not the runner's
    (tmp_path / "file").write_text("")
    assert _resolved(str(tmp_path / "file")) is None  # the helper answers it
    assert _resolved(str(tmp_path / "missing")) is None


@aio
async def test_a_result_is_the_same_either_way(small: SandboxRunner, workspace: Path) -> None:
    first, second = await both_ways(small, workspace, ADDS, {"a": 2, "b": 3})
    assert first.ok and first.result == {"sum": 5}
    same(first, second)
    first, second = await both_ways(small, workspace, WRITES, {"text": "hé"})
    assert first.ok and (workspace / "out.txt").read_text() == "hé"
    same(first, second)


@aio
async def test_a_tool_that_loops_is_killed_at_its_timeout_either_way(
    small: SandboxRunner, workspace: Path
) -> None:
    first, second = await both_ways(small, workspace, SPINS, {}, timeout_s=0.3)
    assert first.error_kind == "timeout", first
    same(first, second)


@aio
async def test_a_tool_that_prints_too_much_is_cut_either_way(
    small: SandboxRunner, workspace: Path
) -> None:
    first, second = await both_ways(small, workspace, PRINTS, {})
    assert first.error_kind == "output", first
    same(first, second)


@aio
async def test_a_child_that_dies_mid_call_fails_the_same_either_way(
    traced_raw: SandboxRunner, workspace: Path
) -> None:
    first, second = await both_ways(traced_raw, workspace, CRASHES, {})
    assert first.error_kind == "runtime" and not first.ok, first
    same(first, second)


@aio
async def test_two_callers_at_once_each_get_a_lent_child_of_their_own(
    traced_raw: SandboxRunner, workspace: Path
) -> None:
    assert (await traced_raw.run(PID, {}, workspace)).ok  # its code reaches the runner
    await until(lambda: len(traced_raw.lent_children(workspace)) >= 2, "two lent children")
    lent = set(traced_raw.lent_children(workspace))
    results = await asyncio.gather(*(traced_raw.run(PID, {}, workspace) for _ in range(2)))
    pids = [res.result for res in results]
    assert all(res.ok for res in results), results
    assert len(set(pids)) == 2 and set(pids) <= lent  # the lent children, one each
    assert all("runner_handed" in stage for stage in traced_raw.stages()[-2:])
    assert not set(pids) & set(traced_raw.lent_children(workspace))  # never lent twice


@aio
async def test_a_helper_whose_zygote_stops_retires_with_calls_handed_directly(
    traced_raw: SandboxRunner, workspace: Path
) -> None:
    assert (await traced_raw.run(PID, {}, workspace)).ok
    helper, zygote = traced_raw.helper_pid(workspace), traced_raw.zygote_pid(workspace)
    assert helper is not None and zygote is not None
    await until(
        lambda: (
            len(traced_raw.lent_children(workspace)) == IDLE_CHILDREN - 1
            and len(children_of(zygote)) >= IDLE_CHILDREN
        ),  # the helper's own one forked too
        "all children but one lent, and the helper's own one waiting",
    )
    waiting = set(children_of(zygote))
    with stopped(zygote):
        served, ways = [], []
        while traced_raw.helper_pid(workspace) == helper:
            res = await traced_raw.run(PID, {}, workspace)
            assert res.ok, res
            served.append(res.result)
            ways.append(handed(traced_raw))
            assert len(served) <= IDLE_CHILDREN + 1, "the helper never retired"
        # the lent children ran the first calls, the helper's last waiting child the
        # next; the one no child took ran in a new helper
        assert ways[: IDLE_CHILDREN - 1] == [True] * (IDLE_CHILDREN - 1), ways
        assert set(served[:-1]) <= waiting and served[-1] not in waiting
        assert traced_raw.helper_pid(workspace) not in (None, helper)
    await until(
        lambda: all(gone(pid) for pid in (helper, zygote, *waiting)),
        "the retired helper, its zygote and its children exit",
    )


@aio
async def test_a_lent_child_that_died_while_waiting_is_not_handed_the_call(
    traced_raw: SandboxRunner, workspace: Path
) -> None:
    assert (await traced_raw.run(PID, {}, workspace)).ok
    await until(lambda: len(traced_raw.lent_children(workspace)) >= 1, "a lent child")
    victims = traced_raw.lent_children(workspace)
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    await until(lambda: all(gone(pid) for pid in victims), "the lent children die")
    res = await traced_raw.run(PID, {}, workspace)
    assert res.ok and res.result not in victims, res


@aio
async def test_a_replaced_workspace_never_reaches_a_child_confined_to_the_old_one(
    small: SandboxRunner, workspace: Path
) -> None:
    assert (await small.run(WRITES, {"text": "old"}, workspace)).ok
    await until(lambda: small.lent_children(workspace), "a child lent to the runner")
    old_lent = small.lent_children(workspace)
    aside = workspace.with_name("aside")
    os.rename(workspace, aside)
    os.mkdir(workspace)
    try:
        res = await small.run(WRITES, {"text": "new"}, workspace)
        assert res.ok, res
        assert not handed(small)  # no lent child is confined to the new directory
        assert (workspace / "out.txt").read_text() == "new"
        assert (aside / "out.txt").read_text() == "old"
        await until(lambda: all(gone(pid) for pid in old_lent), "the stale lent children die")
        await until(lambda: small.lent_children(workspace), "children of the new directory")
        again = await small.run(WRITES, {"text": "again"}, workspace)
        assert again.ok and handed(small), again
        assert (workspace / "out.txt").read_text() == "again"
    finally:
        for name in os.listdir(aside):
            os.unlink(aside / name)
        os.rmdir(aside)


@aio
async def test_a_call_handed_directly_while_its_helper_is_stopped_is_killed_by_the_runner(
    small: SandboxRunner, workspace: Path
) -> None:
    """The helper enforces the deadline; stopped, it cannot: the runner's own bound
    (the call's time and its grace) kills the helper, and the child with it, as it
    does a call the helper handed over itself before it stopped."""
    first, _ = await both_ways(small, workspace, SPINS, {}, timeout_s=0.1)
    await until(lambda: small.lent_children(workspace), "a child lent to the runner")
    helper = small.helper_pid(workspace)
    assert helper is not None
    with stopped(helper):
        late = await small.run(SPINS, {}, workspace, timeout_s=0.1)
        assert handed(small)
        assert late.error_kind == "timeout" and late.error_message.startswith(
            "the tool ran longer than 0.1 s"
        ), late
        assert first.error_message.startswith("the tool ran longer than 0.1 s"), first
    await until(lambda: gone(helper), "the stopped helper is killed")
    res = await small.run(ADDS, {"a": 1, "b": 1}, workspace)
    assert res.ok and small.helper_pid(workspace) not in (None, helper), res


@aio
async def test_no_child_or_zygote_holds_the_lending_socket(workspace: Path, tmp_path: Path) -> None:
    """The lending socket is the helper's and the runner's alone: the zygote closes
    its copy before its first fork, in an exec'd helper and in one forked from the
    runner's template (its descriptors are placed by forge.template)."""
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    try:
        second = tmp_path / "second"
        second.mkdir()
        for ws in (workspace, second):  # the spare (exec'd), then a forked one
            assert (await r.run(ADDS, {"a": 1, "b": 2}, ws)).ok
            await until(lent_in(r, ws), "a child lent to the runner")
            helper, zygote = r.helper_pid(ws), r.zygote_pid(ws)
            assert helper is not None and zygote is not None
            theirs = sockets(helper)  # its socket to the zygote, its lending socket
            assert len(theirs) == 2
            for pid in (zygote, *r.lent_children(ws), *children_of(zygote)):
                assert not sockets(pid) & theirs, pid
        assert r.helpers_forked() >= 1
    finally:
        await r.aclose()


def sockets(pid: int) -> set[str]:
    return {name for name in descriptors(pid).values() if name.startswith("socket:")}


def lent_in(r: SandboxRunner, ws: Path) -> Callable[[], list[int]]:
    return lambda: r.lent_children(ws)


@aio
async def test_the_runner_keeps_only_whole_messages_and_bounded_codes() -> None:
    mine, theirs = lend_socket()
    helper = HelperProcess(1 << 20, None, None, mine)
    try:
        before = len(os.listdir("/proc/self/fd"))
        digest = bytes(32)
        theirs.send(encode_code(digest, b"x" * (LEND_MESSAGE_MAX + 10)))  # truncated here
        r, w = os.pipe()
        try:  # a lend message with one descriptor of two: refused, descriptor closed
            theirs.sendmsg(
                (encode_lend(7, 1, 0, 0, "/w"),),
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [w]).tobytes())],
            )
        finally:
            os.close(r)
            os.close(w)
        helper._lend_readable()
        assert not helper.codes and not helper.lent
        assert len(os.listdir("/proc/self/fd")) == before
        for i in range(CODE_BYTES // (256 << 10) + 8):
            helper._keep_code(bytes([i]) * 32, b"c" * (256 << 10))
        assert sum(map(len, helper.codes.values())) <= CODE_BYTES
        assert bytes([0]) * 32 not in helper.codes  # the oldest went first
    finally:
        helper._close_lent()
        theirs.close()


@aio
async def test_lent_children_killed_while_waiting_leave_no_descriptors(
    small: SandboxRunner, tmp_path: Path
) -> None:
    """A lent child killed while it waits (the OOM killer, a stray signal) was replaced
    and lent again while the runner kept the dead one's descriptors until the next call,
    and the helper its own: 120 kills took the daemon from 27 to 265 descriptors and
    the helper from 23 to 503 (session 37's attacker pass). The helper now says a lent
    child is gone, and the runner, which never handed it a call, drops it at once."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert (await small.run(ADDS, {"a": 1, "b": 2}, workspace)).ok
    await until(lambda: small.lent_children(workspace), "a lent child")
    helper = small.helper_pid(workspace)
    assert helper is not None
    for pid in small.lent_children(workspace):  # the runner's copies end with the daemon
        for fd in small._pool.known(workspace).lent:  # type: ignore[union-attr]
            if fd.pid == pid:
                assert all(os.get_inheritable(d) is False for d in (fd.go, fd.job))
    ours, its = len(descriptors(os.getpid())), len(descriptors(helper))
    for _ in range(30):
        victims = small.lent_children(workspace)
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        await until(
            lambda v=victims: (
                all(p not in small.lent_children(workspace) for p in v)
                and len(small.lent_children(workspace)) == IDLE_CHILDREN - 1
            ),
            "the dead ones dropped and new ones lent",
        )
    assert len(descriptors(os.getpid())) <= ours + 4 and len(descriptors(helper)) <= its + 4
    assert (await small.run(ADDS, {"a": 2, "b": 3}, workspace)).result == {"sum": 5}
