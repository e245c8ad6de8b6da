"""Every call runs in a fresh child that saw no other call (issue 26 item 2).

Children are forked ahead of demand, from the pristine zygote, and each is
handed exactly one call. A tool with the process layers only (no restricted
Python, so it may write into its own process: `sys` gets a list of the calls
it has seen) shows that no call ever runs in a child that ran another call
before, nor in a child forked from one that did: either would find the
earlier call's token already in the list.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from forge.child_pool import IDLE_CHILDREN
from forge.runner import SandboxRunner
from tests.forge.helpers import children_of
from tests.waits import HANG_S, until

pytestmark = pytest.mark.asyncio(loop_scope="module")

REMEMBERS = '''
import os
import sys

def run(token: str) -> dict:
    """Remember this call in the process; say what the process saw."""
    seen = getattr(sys, "forge_test_seen", None)
    if seen is None:
        seen = []
        sys.forge_test_seen = seen
    seen.append(token)
    return {"pid": os.getpid(), "seen": list(seen)}
'''


async def test_no_call_sees_another_calls_process(
    raw_python: SandboxRunner, tmp_path: Path
) -> None:
    pids: set[int] = set()
    tokens = iter(f"call-{i}" for i in range(1000))

    async def call() -> None:
        token = next(tokens)
        res = await raw_python.run(REMEMBERS, {"token": token}, tmp_path)
        assert res.ok, res
        assert res.result["seen"] == [token], res.result  # nothing of an earlier call
        assert res.result["pid"] not in pids
        pids.add(res.result["pid"])

    for _ in range(8):  # one at a time: each takes a child forked ahead of it
        await call()
    await asyncio.gather(*(call() for _ in range(8)))  # more at once than children wait
    assert len(pids) == 16


async def test_two_callers_each_call_in_its_own_fresh_child(
    raw_python: SandboxRunner, tmp_path: Path
) -> None:
    """Two callers back to back (the helper asks for children while calls are in
    flight, forge.child_pool): every call has a child of its own; afterwards the
    helper keeps `IDLE_CHILDREN` waiting, no more."""
    pids: list[int] = []

    async def caller(name: str) -> None:
        for i in range(25):
            token = f"{name}-{i}"
            res = await raw_python.run(REMEMBERS, {"token": token}, tmp_path)
            assert res.ok, res
            assert res.result["seen"] == [token], res.result
            pids.append(res.result["pid"])

    await asyncio.gather(caller("a"), caller("b"))
    assert len(set(pids)) == len(pids) == 50
    zygote = raw_python.zygote_pid(tmp_path)
    assert zygote is not None
    await until(lambda: len(children_of(zygote)) == IDLE_CHILDREN, "the children waiting")
    assert not set(children_of(zygote)) & set(pids)  # none of them ran a call


LEAVES = '''
LEFT = {"by": "an earlier call"}
print("left something")

def run(token: str) -> str:
    """Leave a global, a printed line and a class behind."""
    class Kept:
        pass
    LEFT["token"] = token
    return token
'''
LOOKS = '''
def run() -> list:
    """Say what of an earlier call this call's globals hold."""
    found = []
    try:
        found.append(LEFT)
    except NameError:
        pass
    try:
        found.append(Kept)
    except NameError:
        pass
    return found
'''


async def test_a_calls_globals_start_as_the_zygote_built_them(tmp_path: Path) -> None:
    """The globals of a call are built once in the zygote; each child's own
    copy-on-write copy is its call's: nothing a call defines, prints or changes
    there is in the next call's, in turn or at once."""
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    try:
        for i in range(4):
            left = await r.run(LEAVES, {"token": f"t{i}"}, tmp_path)
            looked = await r.run(LOOKS, {}, tmp_path)
            assert left.ok and left.printed == "left something\n"
            assert looked.ok and looked.result == [] and looked.printed == "", looked
        both = await asyncio.gather(
            *(r.run(LEAVES, {"token": "x"}, tmp_path) for _ in range(3)),
            *(r.run(LOOKS, {}, tmp_path) for _ in range(3)),
        )
        assert [b.result for b in both] == ["x", "x", "x", [], [], []]
    finally:
        await r.aclose()
