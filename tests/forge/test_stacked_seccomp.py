"""The seccomp filter as a stacked pair (issue 26): the zygote installs the whole
filter but for the calls it makes itself (clone, pidfd_open, sendto, sendmsg),
each child adds a filter refusing those four. tests/forge/test_seccomp_program.py
shows on the emulator that the pair answers every call as the whole filter; here,
in real processes: the zygote holds one filter and its children two, a child's
call still gets EPERM for each of the four (with RestrictedPython off, plain
Python and ctypes), and with the seccomp layer off neither holds a filter."""

from __future__ import annotations

import errno
import platform
from pathlib import Path

import pytest

from forge.confine.seccomp import AUDIT_ARCH, ZYGOTE_X86_64
from forge.layers import Layers
from forge.runner import SandboxRunner
from tests.forge.helpers import children_of, tool
from tests.waits import until

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(platform.machine() not in AUDIT_ARCH, reason="no filter here"),
]


def _filters(pid: int) -> int:
    """How many seccomp filters process `pid` holds (0: none)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Seccomp_filters:"):
                return int(line.split()[1])
    pytest.skip("this kernel does not count seccomp filters")


def _counts(pids: list[int]) -> set[int]:
    """The filter counts of the live processes of `pids` (one gone meanwhile: left out)."""
    out = set()
    for pid in pids:
        try:
            out.add(_filters(pid))
        except FileNotFoundError:
            continue
    return out


# Each of the zygote's four, made from the call's child: on a descriptor that is not
# open (EBADF without a filter: the filter answers first) or on the child itself.
_CALLS = """import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
calls = {'sendto': (44, -1, 0, 0, 0, 0, 0), 'sendmsg': (46, -1, 0, 0),
         'pidfd_open': (434, os.getpid(), 0), 'clone': (56, 17, 0, 0, 0, 0)}
out = {}
for name, args in calls.items():
    ctypes.set_errno(0)
    out[name] = [libc.syscall(*args), ctypes.get_errno()]
try:
    os.fork()
    out['fork'] = 'forked'
except OSError as exc:
    out['fork'] = exc.errno
return out
"""


async def test_a_child_still_cannot_make_the_zygotes_calls(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    if not raw_python.capabilities().get("seccomp", {}).get("available"):
        pytest.skip("this machine lacks seccomp")
    res = await raw_python.run(tool(_CALLS), {}, workspace)
    assert res.ok, res
    assert res.result.pop("fork") == errno.EPERM
    assert res.result == {name: [-1, errno.EPERM] for name in ZYGOTE_X86_64}, res.result


async def test_the_zygote_holds_its_part_and_each_child_both(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    if not raw_python.capabilities().get("seccomp", {}).get("available"):
        pytest.skip("this machine lacks seccomp")
    assert (await raw_python.run(tool("return 1"), {}, workspace)).ok
    zygote = raw_python.zygote_pid(workspace)
    helper = raw_python.helper_pid(workspace)
    assert zygote is not None and helper is not None
    assert _filters(helper) == 0  # the helper kills and signals children: no filter
    assert _filters(zygote) == 1
    # a waiting child installs its part while it prepares: each gets there
    await until(lambda: _counts(children_of(zygote)) == {2}, "every waiting child's two filters")


async def test_no_filter_with_the_layer_off(workspace: Path) -> None:
    r = SandboxRunner(layers_for_tests=Layers(lint=False, seccomp=False))
    try:
        assert (await r.run(tool("return 1"), {}, workspace)).ok
        zygote = r.zygote_pid(workspace)
        assert zygote is not None
        assert _filters(zygote) == 0
        assert _counts(children_of(zygote)) <= {0}
    finally:
        await r.aclose()
