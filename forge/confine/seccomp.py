"""seccomp: a BPF program (x86_64) answering EPERM to the syscalls a tool child
never needs (network, new processes, exec, tracing, namespaces, mounts, a file's
mode, owner, times and extended attributes, System V IPC, inotify, ...) and to the
ones it may make on itself only (prlimit64, the scheduler's, setpriority, ...: not
on another process) or with some arguments only (no fcntl/ioctl that has a
descriptor signal another process)."""

from __future__ import annotations

import ctypes
import platform
import struct
from collections.abc import Collection, Iterable

from forge.confine.kernel import set_no_new_privs, syscall

SECCOMP_SET_MODE_FILTER = 1
SYS_SECCOMP = {"x86_64": 317}
AUDIT_ARCH = {"x86_64": 0xC000003E}
# x86_64 syscalls a tool child never needs: network, new processes, exec,
# tracing, namespaces, mounts, kernel keyrings, BPF, io_uring, links, device nodes,
# a file's mode, owner, times and extended attributes.
BLOCKED_X86_64 = {
    "socket": 41,
    "connect": 42,
    "accept": 43,
    "sendto": 44,
    "sendmsg": 46,
    "bind": 49,
    "listen": 50,
    "socketpair": 53,
    "accept4": 288,
    "sendmmsg": 307,
    # a child's one socket is the answer socket its siblings share (forge.protocol.
    # answers): it writes there, and may never shut it or change its options
    "shutdown": 48,
    "setsockopt": 54,
    "clone": 56,
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "execveat": 322,
    "kill": 62,
    "tkill": 200,
    "tgkill": 234,
    "pidfd_send_signal": 424,
    "pidfd_open": 434,
    "pidfd_getfd": 438,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "link": 86,
    "symlink": 88,
    "linkat": 265,
    "symlinkat": 266,
    "mknod": 133,
    "mknodat": 259,
    "chroot": 161,
    "pivot_root": 155,
    "mount": 165,
    "umount2": 166,
    "unshare": 272,
    "setns": 308,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "bpf": 321,
    "userfaultfd": 323,
    "perf_event_open": 298,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "personality": 135,
    "fanotify_init": 300,
    "mount_setattr": 442,
    "move_mount": 429,
    "open_tree": 428,
    "fsopen": 430,
    "fsmount": 432,
    # metadata: Landlock governs a file's contents and names, not its mode, owner,
    # times or extended attributes (session 30's attacker pass changed all four
    # outside the workspace from a child whose Python was unrestricted); a tool is
    # offered none of them. utimensat is in UTIME_BY_PATH below: allowed on a
    # descriptor alone (the gate's `touch` of a file it opened), refused by path.
    "chmod": 90,
    "fchmod": 91,
    "fchmodat": 268,
    "fchmodat2": 452,
    "chown": 92,
    "fchown": 93,
    "lchown": 94,
    "fchownat": 260,
    "utime": 132,
    "utimes": 235,
    "futimesat": 261,
    "setxattr": 188,
    "lsetxattr": 189,
    "fsetxattr": 190,
    "removexattr": 197,
    "lremovexattr": 198,
    "fremovexattr": 199,
    "setxattrat": 463,
    "removexattrat": 466,
}
# utimensat(fd, path, times, flags): refused unless `path` is NULL (futimens(fd)), so
# only a file the child has open can be touched (Landlock decided that open)
UTIMENSAT_X86_64 = 280
CLONE3_X86_64 = 435  # answered with ENOSYS so libc falls back to (blocked) clone
# Refused since the attacker pass that followed session 30: System V IPC and POSIX
# message queues (a shared memory segment outlives the child that made it: host
# memory no rlimit counts; a queue or semaphore set is a channel between tenants; a
# tool uses none of them). inotify watches any directory the user may read, outside
# Landlock (it never checks inotify_add_watch), and told a child the file names of
# other tenants. rt_(tg)sigqueueinfo signal another process as kill does (Landlock
# scopes signals only from ABI 6, Linux 6.12). Pure blocks: the numbers stay cacheable.
BLOCKED_X86_64 |= {
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "shmdt": 67,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "semtimedop": 220,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    "inotify_init": 253,
    "inotify_add_watch": 254,
    "inotify_init1": 294,
    "fanotify_mark": 301,
    "rt_sigqueueinfo": 129,
    "rt_tgsigqueueinfo": 297,
    # the same pass read the daemon's robust-futex list head (an address: ASLR) and
    # compared its kernel objects with kcmp, the daemon without capabilities; the
    # kernel log is no tool's business either
    "get_robust_list": 274,
    "kcmp": 312,
    "syslog": 103,
}
# Calls allowed on the child itself only (a pid argument of 0), refused on any other
# process: the attacker pass after session 30 set the daemon's RLIMIT_NOFILE to 16, its
# RLIMIT_CPU (the kernel then SIGKILLed it) and RLIMIT_FSIZE to 0 with prlimit64, and
# its nice value, policy (SCHED_IDLE) and I/O priority with the calls below. glibc's
# setrlimit/getrlimit are prlimit64(0, ...), os.nice is setpriority(PRIO_PROCESS, 0),
# forge.confine.sched.set_slice(0, ...) is sched_setattr(0, ...): all still allowed.
# A pid is a C int (pid_t): the kernel's syscall wrappers cast each register to the
# declared type, so they read the low 32 bits alone and ignore the high ones. The
# filter checks that low word and only it: a high word that is not 0 still means
# "this process" to the kernel, and is allowed alike (checking it too would refuse
# nothing the kernel would read as another process).
PID0_X86_64 = {
    "prlimit64": 302,
    "sched_setparam": 142,
    "sched_setscheduler": 144,
    "sched_setaffinity": 203,
    "sched_setattr": 314,
    "migrate_pages": 256,
    "move_pages": 279,
}
# setpriority(which, who, prio) and ioprio_set(which, who, ioprio): `who` 0 is "this"
# process only with which = PRIO_PROCESS (0) / IOPRIO_WHO_PROCESS (1); with a process
# group or a user, 0 is the child's own group or user, the daemon's too. So both.
SETPRIORITY_X86_64, PRIO_PROCESS = 141, 0
IOPRIO_SET_X86_64, IOPRIO_WHO_PROCESS = 251, 1
# fcntl(fd, cmd, arg): refused for the commands that make a descriptor signal another
# process (F_SETOWN, F_SETOWN_EX: SIGIO, or F_SETSIG's signal, to the owner when I/O
# is possible: a pipe with O_ASYNC owned by the daemon kills it, SIGIO's default
# action) and for F_SETLEASE (a lease makes another process's open of the file wait
# for the lease break, up to 45 s). ioctl(fd, cmd, arg): FIOSETOWN and SIOCSPGRP
# are F_SETOWN for a socket (the answer socket a child holds). `cmd` is an unsigned
# int: its low word alone is read, as a pid's.
FCNTL_X86_64, IOCTL_X86_64 = 72, 16
F_SETOWN, F_SETSIG, F_SETOWN_EX, F_SETLEASE = 8, 10, 15, 1024
FCNTL_REFUSED = (F_SETOWN, F_SETSIG, F_SETOWN_EX, F_SETLEASE)
FIOSETOWN, SIOCSPGRP = 0x8901, 0x8902
IOCTL_REFUSED = (FIOSETOWN, SIOCSPGRP)


LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
RET_ALLOW, RET_KILL = 0x7FFF0000, 0x80000000
RET_EPERM, RET_ENOSYS = 0x00050000 | 1, 0x00050000 | 38
X32_FIRST = 0x40000000  # x32 ABI syscall numbers start here
LEAF = 4  # numbers checked one by one at the bottom of the search
_RETURN = {RET_ALLOW: "allow", RET_EPERM: "eperm", RET_ENOSYS: "enosys"}  # the last three


def _arg(i: int) -> tuple[int, int]:
    """seccomp_data.args[i]: the offsets of its low and high words (little-endian)."""
    return 16 + 8 * i, 20 + 8 * i


ARG0, ARG1 = _arg(0), _arg(1)
Insn = tuple[int, int | str, int | str, int]  # a jump to a label (a str) until laid out


def _refuse(word: int, values: tuple[int, ...]) -> list[Insn]:
    """EPERM when the 32-bit word at `word` is one of `values`, else allow."""
    out: list[Insn] = [(LD_W_ABS, 0, 0, word)]
    for i, value in enumerate(values):
        out.append((JEQ_K, "eperm", "allow" if i == len(values) - 1 else 0, value))
    return out


# The checks of an argument, after the search and before the returns: each one ends
# in a jump to a return. Not a return themselves: ARG_CHECKS_X86_64 names them by number.
CHECKS: dict[str, list[Insn]] = {
    "path_null": [  # utimensat's path, a pointer: both words 0
        (LD_W_ABS, 0, 0, ARG1[0]),
        (JEQ_K, 0, "eperm", 0),
        (LD_W_ABS, 0, 0, ARG1[1]),
        (JEQ_K, "allow", "eperm", 0),
    ],
    "pid0": [(LD_W_ABS, 0, 0, ARG0[0]), (JEQ_K, "allow", "eperm", 0)],
    "prio_self": [
        (LD_W_ABS, 0, 0, ARG0[0]),
        (JEQ_K, 0, "eperm", PRIO_PROCESS),
        (LD_W_ABS, 0, 0, ARG1[0]),
        (JEQ_K, "allow", "eperm", 0),
    ],
    "ioprio_self": [
        (LD_W_ABS, 0, 0, ARG0[0]),
        (JEQ_K, 0, "eperm", IOPRIO_WHO_PROCESS),
        (LD_W_ABS, 0, 0, ARG1[0]),
        (JEQ_K, "allow", "eperm", 0),
    ],
    "fcntl_cmd": _refuse(ARG1[0], FCNTL_REFUSED),
    "ioctl_cmd": _refuse(ARG1[0], IOCTL_REFUSED),
}
ARG_CHECKS_X86_64 = {
    UTIMENSAT_X86_64: "path_null",
    **dict.fromkeys(PID0_X86_64.values(), "pid0"),
    SETPRIORITY_X86_64: "prio_self",
    IOPRIO_SET_X86_64: "ioprio_self",
    FCNTL_X86_64: "fcntl_cmd",
    IOCTL_X86_64: "ioctl_cmd",
}


def _bpf(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def seccomp_program(allowed: Collection[int] = ()) -> bytes | None:
    """A BPF filter answering EPERM to the blocked syscalls (ENOSYS to clone3, EPERM
    to every x32 number, death to a foreign architecture); None if unsupported arch.
    `allowed`: blocked numbers this filter allows all the same (the zygote's part of
    a stacked pair, `zygote_program`; none for the whole filter).

    A number is found by a binary search (JGE down to at most `LEAF` numbers, then
    JEQ each), not by a list checked one by one: when a child installs the filter,
    the kernel runs it in emulation for every syscall number to cache the ones it
    always allows (`seccomp_cache_prepare_bitmap`, interrupts off), which took a
    pass down the whole list (about 80 instructions) for each of the ~460 numbers;
    the search takes about 10 (issue 26). Only loads of the number and the
    architecture, JEQ/JGE and returns, but for the few numbers in `ARG_CHECKS_X86_64`
    (utimensat's path, a pid, an fcntl or ioctl command), whose argument is then
    loaded: every other allowed number stays cacheable. The architecture is checked
    first: an i386 syscall (int 0x80, AUDIT_ARCH_I386) is killed, so no compat
    number can bypass a rule, and every x32 number is EPERM."""
    arch = platform.machine()
    if arch not in AUDIT_ARCH:
        return None
    actions: dict[int, int | str] = {
        nr: "eperm" for nr in BLOCKED_X86_64.values() if nr not in allowed
    }
    actions[CLONE3_X86_64] = "enosys"  # so libc falls back to (blocked) clone
    actions |= ARG_CHECKS_X86_64
    return _program(arch, actions)


def _program(arch: str, actions: dict[int, int | str]) -> bytes:
    """The filter for `actions` (a number's return label, or the name of its argument
    check in CHECKS); every other native number is allowed."""
    head: list[tuple[int, int, int, int]] = [
        (LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (JEQ_K, 1, 0, AUDIT_ARCH[arch]),
        (RET_K, 0, 0, RET_KILL),
        (LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (JGE_K, 0, 1, X32_FIRST),
        (RET_K, 0, 0, RET_EPERM),
    ]
    body: list[Insn] = []  # the search

    def search(nrs: list[int]) -> None:
        if len(nrs) <= LEAF:
            for i, nr in enumerate(nrs):
                last = i == len(nrs) - 1
                body.append((JEQ_K, actions[nr], "allow" if last else 0, nr))
            return
        mid = len(nrs) // 2
        at = len(body)
        body.append((JGE_K, 0, 0, nrs[mid]))
        search(nrs[:mid])
        body[at] = (JGE_K, len(body) - at - 1, 0, nrs[mid])  # over the lower half
        search(nrs[mid:])

    search(sorted(actions))
    used = [name for name in CHECKS if name in actions.values()]
    at: dict[str, int] = {}
    tail: list[Insn] = []  # the checks, then the returns in their order
    for name in used:
        at[name] = len(head) + len(body) + len(tail)
        tail += CHECKS[name]
    end = len(head) + len(body) + len(tail)
    at |= {label: end + i for i, label in enumerate(_RETURN.values())}
    prog = [_bpf(*insn) for insn in head]
    for pc, (code, jt, jf, k) in enumerate([*body, *tail], len(head)):
        jumps = [at[j] - pc - 1 if isinstance(j, str) else j for j in (jt, jf)]
        if not all(0 <= j <= 255 for j in jumps):  # jt and jf are one byte each
            raise ValueError(f"seccomp: a jump too far at {pc}: {jumps}")
        prog.append(_bpf(code, jumps[0], jumps[1], k))
    prog += [_bpf(RET_K, 0, 0, action) for action in _RETURN]
    return b"".join(prog)


# Stacked filters (issue 26): the zygote installs once the whole filter but for the
# calls it makes itself (forking a child: clone; its pidfd: pidfd_open; the messages
# to its helper: sendto, and sendmsg with the child's descriptors), and each child,
# which inherits that filter, installs only the rest: those four, refused. The
# kernel runs every filter of a process and takes the strictest answer (death, then
# an errno, then allow; of two errnos the newer filter's: there are none, the two
# programs refuse disjoint sets), so a child's pair answers every call, argument and
# architecture as the whole filter did (tests/forge/test_seccomp_program.py runs
# both through the emulator), and a child installs 13 instructions instead of 189
# (the kernel emulates a new filter for every number to cache the allowed ones, and
# compiles it): its install took 69-82 µs instead of 117-138 µs (session 35).
ZYGOTE_X86_64 = {"clone": 56, "sendto": 44, "sendmsg": 46, "pidfd_open": 434}


def zygote_program() -> bytes | None:
    """The zygote's part of the stacked pair: the whole filter but for ZYGOTE_X86_64."""
    return seccomp_program(ZYGOTE_X86_64.values())


def child_program() -> bytes | None:
    """A child's part of the stacked pair, installed over `zygote_program`: EPERM for
    ZYGOTE_X86_64 (and every x32 number, death to a foreign architecture, as the
    zygote's part already answers), every other number allowed here."""
    arch = platform.machine()
    if arch not in AUDIT_ARCH:
        return None
    return _program(arch, {nr: "eperm" for nr in ZYGOTE_X86_64.values()})


def stacked(answers: Iterable[int]) -> int:
    """The kernel's answer for a syscall from the answers of every filter installed,
    newest first: the strictest action (its SECCOMP_RET_ACTION_FULL as a signed
    number: kill, then errno, then allow); of equal actions the newest filter's."""
    best: int | None = None
    for answer in answers:
        if best is None or _signed(answer & 0xFFFF0000) < _signed(best & 0xFFFF0000):
            best = answer
    if best is None:
        raise ValueError("no filter")
    return best


def _signed(action: int) -> int:
    return action - (1 << 32) if action & 0x80000000 else action


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class SeccompFilter:
    """A BPF program in C memory, built once in the helper, installed per child."""

    def __init__(self, program: bytes) -> None:
        self._buf = ctypes.create_string_buffer(program, len(program))
        self._fprog = _SockFprog(len(program) // 8, ctypes.addressof(self._buf))
        self._nr = SYS_SECCOMP[platform.machine()]

    def install(self) -> None:
        set_no_new_privs()
        syscall(self._nr, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(self._fprog))


def apply_seccomp(program: bytes) -> None:
    SeccompFilter(program).install()
