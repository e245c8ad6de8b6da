"""seccomp: a BPF program (x86_64) answering EPERM to the syscalls a tool child
never needs (network, new processes, exec, tracing, namespaces, mounts, a file's
mode, owner, times and extended attributes, ...)."""

from __future__ import annotations

import ctypes
import platform
import struct

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


LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
RET_ALLOW, RET_KILL = 0x7FFF0000, 0x80000000
RET_EPERM, RET_ENOSYS = 0x00050000 | 1, 0x00050000 | 38
X32_FIRST = 0x40000000  # x32 ABI syscall numbers start here
LEAF = 4  # numbers checked one by one at the bottom of the search
_RETURN = {RET_ALLOW: "allow", RET_EPERM: "eperm", RET_ENOSYS: "enosys"}  # the last three
PATH_NULL = -1  # not a return: the check of utimensat's path argument, before the returns
ARG1 = (24, 28)  # seccomp_data.args[1]: its low and high words (little-endian)


def _bpf(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def seccomp_program() -> bytes | None:
    """A BPF filter answering EPERM to the blocked syscalls (ENOSYS to clone3, EPERM
    to every x32 number, death to a foreign architecture); None if unsupported arch.

    A number is found by a binary search (JGE down to at most `LEAF` numbers, then
    JEQ each), not by a list checked one by one: when a child installs the filter,
    the kernel runs it in emulation for every syscall number to cache the ones it
    always allows (`seccomp_cache_prepare_bitmap`, interrupts off), which took a
    pass down the whole list (about 80 instructions) for each of the ~460 numbers;
    the search takes about 10 (issue 26). Only loads of the number and the
    architecture, JEQ/JGE and returns, but for utimensat, whose path argument is
    then loaded (allowed when NULL): every other allowed number stays cacheable."""
    arch = platform.machine()
    if arch not in AUDIT_ARCH:
        return None
    actions = {nr: RET_EPERM for nr in BLOCKED_X86_64.values()}
    actions[CLONE3_X86_64] = RET_ENOSYS  # so libc falls back to (blocked) clone
    actions[UTIMENSAT_X86_64] = PATH_NULL
    names = {**_RETURN, PATH_NULL: "path_null"}
    head = [
        (LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (JEQ_K, 1, 0, AUDIT_ARCH[arch]),
        (RET_K, 0, 0, RET_KILL),
        (LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (JGE_K, 0, 1, X32_FIRST),
        (RET_K, 0, 0, RET_EPERM),
    ]
    # the search; a jump to a return is its name (a string) until laid out
    body: list[tuple[int, int | str, int | str, int]] = []

    def search(nrs: list[int]) -> None:
        if len(nrs) <= LEAF:
            for i, nr in enumerate(nrs):
                last = i == len(nrs) - 1
                body.append((JEQ_K, names[actions[nr]], "allow" if last else 0, nr))
            return
        mid = len(nrs) // 2
        at = len(body)
        body.append((JGE_K, 0, 0, nrs[mid]))
        search(nrs[:mid])
        body[at] = (JGE_K, len(body) - at - 1, 0, nrs[mid])  # over the lower half
        search(nrs[mid:])

    search(sorted(actions))
    path_null: list[tuple[int, int | str, int | str, int]] = [
        (LD_W_ABS, 0, 0, ARG1[0]),
        (JEQ_K, 0, "eperm", 0),
        (LD_W_ABS, 0, 0, ARG1[1]),
        (JEQ_K, "allow", "eperm", 0),
    ]
    end = len(head) + len(body)  # the path check, then the returns in their order
    at = {"path_null": end} | {n: end + len(path_null) + i for i, n in enumerate(_RETURN.values())}
    prog = [_bpf(*insn) for insn in head]
    for pc, (code, jt, jf, k) in enumerate([*body, *path_null], len(head)):
        jumps = [at[j] - pc - 1 if isinstance(j, str) else j for j in (jt, jf)]
        prog.append(_bpf(code, jumps[0], jumps[1], k))
    prog += [_bpf(RET_K, 0, 0, action) for action in _RETURN]
    return b"".join(prog)


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
