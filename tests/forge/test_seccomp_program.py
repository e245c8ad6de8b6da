"""The seccomp program (forge.confine.seccomp), run by an emulator of classic BPF as
the kernel runs it: every syscall number gets the action the block list says
(EPERM for a blocked one, ENOSYS for clone3, EPERM for every x32 number, death
for a foreign architecture), it uses only instructions the kernel can emulate to
cache the always-allowed numbers (but utimensat, whose path argument it reads:
allowed only when NULL, on a descriptor), and each number takes a short pass (a
binary search), not the whole list: the kernel runs that pass for every number
when a child installs the filter."""

from __future__ import annotations

import platform
import struct

import pytest

from forge.confine.seccomp import (
    AUDIT_ARCH,
    BLOCKED_X86_64,
    CLONE3_X86_64,
    RET_ALLOW,
    RET_ENOSYS,
    RET_EPERM,
    RET_KILL,
    UTIMENSAT_X86_64,
    seccomp_program,
)

pytestmark = pytest.mark.skipif(platform.machine() not in AUDIT_ARCH, reason="no filter here")
ARCH = AUDIT_ARCH.get(platform.machine(), 0)
LD_W_ABS, JA, JEQ_K, JGE_K, JGT_K, RET_K = 0x20, 0x05, 0x15, 0x35, 0x25, 0x06


def run(prog: bytes, nr: int, arch: int = ARCH, arg1: int | None = None) -> tuple[int, int]:
    """(the action, instructions run) for syscall `nr` on `arch`, as the kernel's
    `seccomp_is_const_allow` walks it (it knows these instructions only); with
    `arg1`, the syscall's second argument is known too (as when the filter runs)."""
    insns = [struct.unpack_from("HBBI", prog, i) for i in range(0, len(prog), 8)]
    acc, pc, steps = 0, 0, 0
    while True:
        code, jt, jf, k = insns[pc]  # IndexError: a jump out of the program
        steps += 1
        if code == LD_W_ABS:
            if k in (24, 28):  # seccomp_data.args[1], low and high words
                assert arg1 is not None, f"syscall {nr} reads its arguments: not constant"
                acc = arg1 & 0xFFFFFFFF if k == 24 else arg1 >> 32
                pc += 1
                continue
            assert k in (0, 4), "only seccomp_data.nr and .arch are constant"
            acc = nr if k == 0 else arch
        elif code == RET_K:
            return k, steps
        elif code == JA:
            pc += k
        elif code in (JEQ_K, JGE_K, JGT_K):
            hit = acc == k if code == JEQ_K else acc >= k if code == JGE_K else acc > k
            pc += jt if hit else jf
        else:
            raise AssertionError(f"instruction {code:#x} is not cacheable")
        pc += 1


def test_every_number_gets_its_action_in_a_short_pass() -> None:
    prog = seccomp_program()
    assert prog is not None
    blocked = set(BLOCKED_X86_64.values())
    longest = 0
    for nr in range(0, 2048):
        if nr == UTIMENSAT_X86_64:
            continue  # below: its action depends on its path argument
        action, steps = run(prog, nr)
        want = RET_ENOSYS if nr == CLONE3_X86_64 else RET_EPERM if nr in blocked else RET_ALLOW
        assert action == want, nr
        longest = max(longest, steps)
    assert longest <= 16  # a search; the list checked one by one ran about 80
    for nr in (0x40000000, 0x40000000 + 41, 0x40000000 + 59, 0xFFFFFFFF):  # x32
        assert run(prog, nr)[0] == RET_EPERM
    for arch in (0x40000003, 0xC00000B7, 0):  # i386, aarch64, nonsense
        assert run(prog, 41, arch)[0] == RET_KILL
        assert run(prog, 0, arch)[0] == RET_KILL


def test_utimensat_is_allowed_on_a_descriptor_only() -> None:
    """futimens(fd) is utimensat(fd, NULL, ...): the gate's `touch` of a file it opened.
    With a path, the times of any file the child may not even open could be set."""
    prog = seccomp_program()
    assert prog is not None
    assert run(prog, UTIMENSAT_X86_64, arg1=0)[0] == RET_ALLOW
    for pointer in (0x7FFD_1234_5678, 0x1, 0x1_0000_0000):  # low word 0, high not
        assert run(prog, UTIMENSAT_X86_64, arg1=pointer)[0] == RET_EPERM


def test_metadata_calls_are_refused() -> None:
    prog = seccomp_program()
    assert prog is not None
    for name in ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown"):
        assert run(prog, BLOCKED_X86_64[name])[0] == RET_EPERM, name
    for name in ("fchownat", "utime", "utimes", "futimesat", "setxattr", "fsetxattr"):
        assert run(prog, BLOCKED_X86_64[name])[0] == RET_EPERM, name
    for name in ("lsetxattr", "removexattr", "lremovexattr", "fremovexattr"):
        assert run(prog, BLOCKED_X86_64[name])[0] == RET_EPERM, name
