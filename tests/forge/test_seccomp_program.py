"""The seccomp program (forge.confine.seccomp), run by an emulator of classic BPF as
the kernel runs it: every syscall number gets the action the block list says
(EPERM for a blocked one, ENOSYS for clone3, EPERM for every x32 number, death
for a foreign architecture), it uses only instructions the kernel can emulate to
cache the always-allowed numbers (but utimensat, whose path argument it reads:
allowed only when NULL, on a descriptor), and each number takes a short pass (a
binary search), not the whole list: the kernel runs that pass for every number
when a child installs the filter. The calls allowed on the child itself only
(prlimit64, the scheduler's, setpriority, ioprio_set: a pid of 0) and fcntl/ioctl
without the commands that make a descriptor signal another process read an
argument's low word, as the kernel does (a C int). The stacked pair (the zygote's
part, then each child's) answers every call as the whole filter does."""

from __future__ import annotations

import platform
import struct

import pytest

from forge.confine.seccomp import (
    ARG_CHECKS_X86_64,
    AUDIT_ARCH,
    BLOCKED_X86_64,
    CLONE3_X86_64,
    FCNTL_REFUSED,
    FCNTL_X86_64,
    IOCTL_REFUSED,
    IOCTL_X86_64,
    IOPRIO_SET_X86_64,
    PID0_X86_64,
    RET_ALLOW,
    RET_ENOSYS,
    RET_EPERM,
    RET_KILL,
    SETPRIORITY_X86_64,
    UTIMENSAT_X86_64,
    X32_FIRST,
    ZYGOTE_X86_64,
    child_program,
    seccomp_program,
    stacked,
    zygote_program,
)

pytestmark = pytest.mark.skipif(platform.machine() not in AUDIT_ARCH, reason="no filter here")
ARCH = AUDIT_ARCH.get(platform.machine(), 0)
LD_W_ABS, JA, JEQ_K, JGE_K, JGT_K, RET_K = 0x20, 0x05, 0x15, 0x35, 0x25, 0x06


def run(
    prog: bytes, nr: int, arch: int = ARCH, arg1: int | None = None, arg0: int | None = None
) -> tuple[int, int]:
    """(the action, instructions run) for syscall `nr` on `arch`, as the kernel's
    `seccomp_is_const_allow` walks it (it knows these instructions only); with
    `arg0`/`arg1`, the syscall's first/second argument is known too (as when the
    filter runs)."""
    insns = [struct.unpack_from("HBBI", prog, i) for i in range(0, len(prog), 8)]
    args = {16: arg0, 24: arg1}
    acc, pc, steps = 0, 0, 0
    while True:
        code, jt, jf, k = insns[pc]  # IndexError: a jump out of the program
        steps += 1
        if code == LD_W_ABS:
            if k - k % 8 in args:  # seccomp_data.args[0] or [1], low or high word
                arg = args[k - k % 8]
                assert arg is not None, f"syscall {nr} reads its arguments: not constant"
                acc = arg & 0xFFFFFFFF if k % 8 == 0 else arg >> 32
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
        if nr in ARG_CHECKS_X86_64:
            continue  # below: its action depends on an argument
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


def test_ipc_inotify_and_queued_signals_are_refused() -> None:
    """System V IPC (segments outlive the child), POSIX message queues, inotify
    (watches outside Landlock) and rt_(tg)sigqueueinfo (a signal to the daemon where
    Landlock does not scope signals): refused whatever their arguments, so cacheable."""
    prog = seccomp_program()
    assert prog is not None
    names: tuple[str, ...] = (
        "shmget",
        "shmat",
        "shmctl",
        "shmdt",
        "semget",
        "semop",
        "semctl",
        "semtimedop",
    )
    names += ("msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend")
    names += ("mq_timedreceive", "mq_notify", "mq_getsetattr", "inotify_init", "inotify_init1")
    names += ("inotify_add_watch", "fanotify_init", "fanotify_mark")
    names += ("rt_sigqueueinfo", "rt_tgsigqueueinfo", "kill", "tkill", "tgkill")
    names += ("get_robust_list", "kcmp", "syslog")
    numbers = {"shmget": 29, "inotify_init1": 294, "rt_sigqueueinfo": 129, "msgget": 68}
    numbers |= {"get_robust_list": 274, "kcmp": 312, "syslog": 103}
    for name, nr in numbers.items():  # the x86_64 numbers themselves, not only the table's
        assert BLOCKED_X86_64[name] == nr
    for name in names:
        assert run(prog, BLOCKED_X86_64[name])[0] == RET_EPERM, name


DAEMON = 4242
# a pid argument whose low word is 0 is this process to the kernel (a C int); one
# whose low word is the daemon's is the daemon, whatever the high word
HIGH = 0xDEAD_BEEF << 32


def test_calls_on_a_process_are_allowed_on_the_child_only() -> None:
    prog = seccomp_program()
    assert prog is not None
    for name, nr in PID0_X86_64.items():
        assert run(prog, nr, arg0=0)[0] == RET_ALLOW, name
        assert run(prog, nr, arg0=HIGH)[0] == RET_ALLOW, name  # the kernel reads pid 0
        for pid in (DAEMON, 1, DAEMON | HIGH, 0xFFFFFFFF, 1 << 31):
            assert run(prog, nr, arg0=pid)[0] == RET_EPERM, (name, pid)
    assert PID0_X86_64["prlimit64"] == 302 and PID0_X86_64["sched_setattr"] == 314
    # setpriority(which, who, prio): PRIO_PROCESS (0) and who 0 only; a process group
    # or a user (1, 2) with who 0 is the child's own, which holds the daemon too
    assert SETPRIORITY_X86_64 == 141
    assert run(prog, SETPRIORITY_X86_64, arg0=0, arg1=0)[0] == RET_ALLOW
    assert run(prog, SETPRIORITY_X86_64, arg0=HIGH, arg1=HIGH)[0] == RET_ALLOW
    for which, who in ((0, DAEMON), (1, 0), (2, 0), (1, DAEMON), (0, DAEMON | HIGH)):
        assert run(prog, SETPRIORITY_X86_64, arg0=which, arg1=who)[0] == RET_EPERM, (which, who)
    # ioprio_set(which, who, ioprio): IOPRIO_WHO_PROCESS (1) and who 0 only
    assert IOPRIO_SET_X86_64 == 251
    assert run(prog, IOPRIO_SET_X86_64, arg0=1, arg1=0)[0] == RET_ALLOW
    for which, who in ((1, DAEMON), (2, 0), (3, 0), (0, 0), (1, DAEMON | HIGH)):
        assert run(prog, IOPRIO_SET_X86_64, arg0=which, arg1=who)[0] == RET_EPERM, (which, who)


def test_no_descriptor_signals_another_process() -> None:
    """fcntl F_SETOWN/F_SETOWN_EX/F_SETSIG (SIGIO to the owner), F_SETLEASE, and ioctl
    FIOSETOWN/SIOCSPGRP (F_SETOWN of a socket) refused; every other command allowed."""
    prog = seccomp_program()
    assert prog is not None
    assert (FCNTL_X86_64, IOCTL_X86_64) == (72, 16)
    assert set(FCNTL_REFUSED) >= {8, 10, 15} and set(IOCTL_REFUSED) == {0x8901, 0x8902}
    for cmd in FCNTL_REFUSED:
        assert run(prog, FCNTL_X86_64, arg1=cmd)[0] == RET_EPERM, cmd
        assert run(prog, FCNTL_X86_64, arg1=cmd | HIGH)[0] == RET_EPERM, cmd
    for cmd in (0, 1, 2, 3, 4, 5, 6, 7, 9, 1030, 1031, 1033, 1034, 16):  # F_DUPFD .. F_GETOWN_EX
        assert run(prog, FCNTL_X86_64, arg1=cmd)[0] == RET_ALLOW, cmd
    for cmd in IOCTL_REFUSED:
        assert run(prog, IOCTL_X86_64, arg1=cmd)[0] == RET_EPERM, cmd
    for cmd in (0x5401, 0x541B, 0x5421, 0x5452, 0x8903):  # TCGETS, FIONREAD, FIONBIO, FIOASYNC
        assert run(prog, IOCTL_X86_64, arg1=cmd)[0] == RET_ALLOW, cmd


def test_only_the_argument_checks_read_arguments() -> None:
    """Every number outside ARG_CHECKS_X86_64 is decided on its number alone (the
    search above asserts it), and each one inside is decided in a short pass."""
    prog = seccomp_program()
    assert prog is not None
    for nr in ARG_CHECKS_X86_64:
        for arg0, arg1 in ((0, 0), (1, 0), (DAEMON, DAEMON), (0, 0xFFFF_FFFF)):
            steps = run(prog, nr, arg0=arg0, arg1=arg1)[1]
            assert steps <= 24, (nr, steps)


def _decisions(
    nr: int, arch: int = ARCH, arg0: int | None = None, arg1: int | None = None
) -> tuple[int, int]:
    """(the whole filter's answer, the stacked pair's) for one syscall."""
    whole, zygote, child = seccomp_program(), zygote_program(), child_program()
    assert whole is not None and zygote is not None and child is not None
    one = run(whole, nr, arch, arg1, arg0)[0]
    # newest first: the child's part, then the zygote's (the kernel's order)
    pair = stacked([run(child, nr, arch, arg1, arg0)[0], run(zygote, nr, arch, arg1, arg0)[0]])
    return one, pair


def test_the_stacked_pair_decides_every_call_as_the_whole_filter() -> None:
    """The zygote installs the whole filter but for what it calls itself, each child
    the rest (issue 26): every native number, every argument the checks read, every
    x32 number tried and a foreign architecture get the same answer from the pair,
    combined as the kernel combines filters, as from the whole filter."""
    for nr in range(0, 2048):
        if nr in ARG_CHECKS_X86_64:
            continue
        one, pair = _decisions(nr)
        assert one == pair, nr
    args = (0, 1, 2, DAEMON, HIGH, DAEMON | HIGH, 0xFFFFFFFF, 1 << 31, 3)
    for nr in ARG_CHECKS_X86_64:
        for arg0 in args:
            for arg1 in (*args, *FCNTL_REFUSED, *IOCTL_REFUSED, 0x5401, 16):
                one, pair = _decisions(nr, arg0=arg0, arg1=arg1)
                assert one == pair, (nr, arg0, arg1)
    for nr in (X32_FIRST, X32_FIRST + 41, X32_FIRST + 56, X32_FIRST + 434, 0xFFFFFFFF):
        assert _decisions(nr) == (RET_EPERM, RET_EPERM), nr
    for arch in (0x40000003, 0xC00000B7, 0):  # i386, aarch64, nonsense
        for nr in (0, 41, 44, 46, 56, 434, 435):
            assert _decisions(nr, arch) == (RET_KILL, RET_KILL), (arch, nr)


def test_the_zygote_part_allows_only_what_the_zygote_calls() -> None:
    """What the zygote's part lets through and the whole filter does not: forking a
    child (clone), its pidfd, and the messages to the helper; the child's part
    refuses exactly those, and reads no argument (every number stays cacheable)."""
    whole, zygote, child = seccomp_program(), zygote_program(), child_program()
    assert whole is not None and zygote is not None and child is not None
    plain = [nr for nr in range(0, 2048) if nr not in ARG_CHECKS_X86_64]  # arguments: above
    loosened = {nr for nr in plain if run(zygote, nr)[0] != run(whole, nr)[0]}
    assert loosened == set(ZYGOTE_X86_64.values()) == {56, 44, 46, 434}
    for nr in loosened:
        assert run(zygote, nr)[0] == RET_ALLOW and run(child, nr)[0] == RET_EPERM
    for nr in range(0, 2048):
        action, steps = run(child, nr)  # no argument given: any read would fail
        assert action == (RET_EPERM if nr in loosened else RET_ALLOW), nr
        assert steps <= 10
    assert len(child) // 8 < len(whole) // 8 // 10


def test_stacked_takes_the_strictest_answer() -> None:
    """The kernel's rule for several filters: death over an errno over allow; of two
    errnos, the newest filter's."""
    assert stacked([RET_ALLOW, RET_EPERM]) == RET_EPERM
    assert stacked([RET_EPERM, RET_ALLOW]) == RET_EPERM
    assert stacked([RET_EPERM, RET_KILL]) == RET_KILL
    assert stacked([RET_ALLOW, RET_ALLOW]) == RET_ALLOW
    assert stacked([RET_ENOSYS, RET_EPERM]) == RET_ENOSYS
    assert stacked([RET_EPERM, RET_ENOSYS]) == RET_EPERM
