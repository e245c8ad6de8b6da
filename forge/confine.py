"""Process confinement for one sandbox child: rlimits, capabilities, Landlock, seccomp.

All kernel interfaces are called through ctypes (no extra dependency). `probe()`
reports, once, what this machine offers; the helper logs every missing layer as
a WARNING at start-up and never skips one silently. Layer 3 of 4.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import signal
import struct
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

# Landlock (generic syscall numbers, same on x86_64 and aarch64)
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
FS_MAKE_SYM, FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
SYS_CLOSE_RANGE = 436  # generic number, x86_64 and aarch64
PR_CAPBSET_DROP = 24
SECCOMP_SET_MODE_FILTER = 1
SYS_SECCOMP = {"x86_64": 317}
AUDIT_ARCH = {"x86_64": 0xC000003E}
# x86_64 syscalls a tool child never needs: network, new processes, exec,
# tracing, namespaces, mounts, kernel keyrings, BPF, io_uring, links, device nodes.
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
}
CLONE3_X86_64 = 435  # answered with ENOSYS so libc falls back to (blocked) clone


@dataclass(frozen=True, slots=True)
class Limits:
    cpu_s: int = 5
    address_space: int = 768 * 1024 * 1024
    open_files: int = 64
    file_size: int = 16 * 1024 * 1024


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(nr: int, *args: object) -> int:
    res = _libc.syscall(nr, *args)
    if res < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(res)


def landlock_abi() -> int:
    """The Landlock ABI version, 0 when the kernel lacks it."""
    try:
        return _syscall(
            SYS_LANDLOCK_CREATE_RULESET,
            None,
            ctypes.c_size_t(0),
            ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
        )
    except OSError:
        return 0


def _fs_mask(abi: int) -> int:
    mask = (1 << 13) - 1
    if abi >= 2:
        mask |= FS_REFER
    if abi >= 3:
        mask |= FS_TRUNCATE
    if abi >= 5:
        mask |= FS_IOCTL_DEV
    return mask


def close_range(first: int, last: int) -> None:
    """Close descriptors first..last with one close_range(2) call (fallback: a loop)."""
    try:
        _syscall(SYS_CLOSE_RANGE, ctypes.c_uint(first), ctypes.c_uint(last), ctypes.c_uint(0))
    except OSError:
        os.closerange(first, min(last + 1, os.sysconf("SC_OPEN_MAX")))


def read_only_roots() -> list[str]:
    """Directories the child may read: the standard library and site-packages
    (for lazy imports) and the forge package itself; nothing else."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.add(os.path.join(paths["platstdlib"], "lib-dynload"))
    roots.add(os.path.dirname(os.path.abspath(__file__)))
    out = []
    for root in sorted(roots):
        real = os.path.realpath(root)
        if os.path.isdir(real) and real != "/":
            out.append(real)
    return out


def open_roots(paths: Sequence[str]) -> list[int]:
    """O_PATH descriptors for `paths`, opened once in the helper and inherited."""
    return [os.open(p, os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY) for p in paths]


def _landlock_access(abi: int) -> tuple[int, int, int]:
    """(handled, read, write) access masks for this ABI."""
    handled = _fs_mask(abi)
    read = FS_READ_FILE | FS_READ_DIR
    write = read | FS_WRITE_FILE | FS_REMOVE_FILE | FS_REMOVE_DIR | FS_MAKE_REG | FS_MAKE_DIR
    if abi >= 3:
        write |= FS_TRUNCATE
    return handled, read & handled, write & handled


def _add_path_rule(ruleset: int, fd: int, allowed: int) -> None:
    rule = _PathBeneath(allowed, fd)
    _syscall(
        SYS_LANDLOCK_ADD_RULE,
        ruleset,
        LANDLOCK_RULE_PATH_BENEATH,
        ctypes.byref(rule),
        ctypes.c_uint32(0),
    )


def landlock_ruleset(abi: int, read_fds: Sequence[int]) -> int:
    """A new Landlock ruleset with the read-only roots; the workspace rule is not in it.

    Built by each sandbox child for itself, before its call arrives, so it never
    holds a workspace rule of another call: a ruleset is a kernel object shared by
    every descriptor that refers to it, so one built in the helper and inherited
    would collect every child's workspace rule. `landlock_restrict` adds the
    workspace and applies it.
    """
    handled, read, _ = _landlock_access(abi)
    attr = _RulesetAttr(
        handled,
        NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0,
    )
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _syscall(
        SYS_LANDLOCK_CREATE_RULESET,
        ctypes.byref(attr),
        ctypes.c_size_t(size),
        ctypes.c_uint32(0),  # the kernel makes ruleset descriptors close-on-exec
    )
    try:
        for fd in read_fds:
            _add_path_rule(ruleset, fd, read)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def landlock_restrict(abi: int, ruleset: int, workspace_fd: int) -> None:
    """Add the workspace (read/write) to `ruleset`, enforce it on this process, close it."""
    try:
        _add_path_rule(ruleset, workspace_fd, _landlock_access(abi)[2])
        set_no_new_privs()
        _syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def apply_landlock(abi: int, workspace_fd: int, read_fds: Sequence[int]) -> None:
    """Writes only under the workspace; reads only there and in the Python roots.

    No symlinks, device nodes, FIFOs or sockets may be made anywhere, no file
    may be executed, cross-directory links/renames (REFER) are refused; with
    ABI >= 4 all TCP bind/connect, with ABI >= 6 signals and abstract UNIX
    sockets outside the sandbox.
    """
    landlock_restrict(abi, landlock_ruleset(abi, read_fds), workspace_fd)


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when its parent (the helper) dies; exit now if it already has."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(0)


def set_no_new_privs() -> None:
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _bpf(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def seccomp_program() -> bytes | None:
    """A BPF filter answering EPERM to the blocked syscalls; None if unsupported arch."""
    arch = platform.machine()
    if arch not in AUDIT_ARCH:
        return None
    ld_w_abs, jeq_k, jge_k, ret_k = 0x20, 0x15, 0x35, 0x06
    ret_allow, ret_kill = 0x7FFF0000, 0x80000000
    ret_eperm, ret_enosys = 0x00050000 | 1, 0x00050000 | 38
    blocked = sorted(set(BLOCKED_X86_64.values()))
    prog = [
        _bpf(ld_w_abs, 0, 0, 4),  # seccomp_data.arch
        _bpf(jeq_k, 1, 0, AUDIT_ARCH[arch]),
        _bpf(ret_k, 0, 0, ret_kill),
        _bpf(ld_w_abs, 0, 0, 0),  # seccomp_data.nr
    ]
    # x32 ABI numbers (>= 0x40000000) and clone3 first, then the list.
    n = len(blocked)
    prog.append(_bpf(jge_k, n + 2, 0, 0x40000000))  # -> eperm
    prog.append(_bpf(jeq_k, n + 2, 0, CLONE3_X86_64))  # -> enosys
    for i, nr in enumerate(blocked):
        prog.append(_bpf(jeq_k, n - i, 0, nr))  # -> eperm
    prog.append(_bpf(ret_k, 0, 0, ret_allow))
    prog.append(_bpf(ret_k, 0, 0, ret_eperm))
    prog.append(_bpf(ret_k, 0, 0, ret_enosys))
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
        _syscall(self._nr, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(self._fprog))


def apply_seccomp(program: bytes) -> None:
    SeccompFilter(program).install()


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 63


def drop_capabilities(bounding: bool = False, last: int = 63) -> None:
    """Empty the effective, permitted and inheritable sets (root included), so root
    in the child no longer bypasses file permissions or RLIMIT_NPROC. The bounding
    set only matters across execve, which seccomp and no_new_privs already stop;
    `bounding=True` clears it too (about 40 extra syscalls)."""
    if bounding:
        for cap in range(last + 1):
            _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def apply_rlimits(limits: Limits) -> None:
    cpu = max(1, limits.cpu_s)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space, limits.address_space))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def probe() -> dict[str, object]:
    """What this machine offers, as {layer: {"available": bool, "detail": str}}."""
    caps: dict[str, object] = {}
    abi = landlock_abi()
    caps["landlock"] = {
        "available": abi > 0,
        "detail": f"ABI {abi}"
        if abi
        else "kernel lacks Landlock (needs >= 5.13 with lsm=landlock)",
    }
    caps["landlock_network"] = {
        "available": abi >= 4,
        "detail": "TCP bind/connect denied" if abi >= 4 else "needs Landlock ABI 4 (kernel >= 6.7)",
    }
    caps["landlock_signal_scope"] = {
        "available": abi >= 6,
        "detail": "signals scoped" if abi >= 6 else "needs Landlock ABI 6 (kernel >= 6.12)",
    }
    prog = seccomp_program()
    caps["seccomp"] = {
        "available": prog is not None and _seccomp_works(prog),
        "detail": f"arch {platform.machine()}"
        if prog is not None
        else f"no syscall table for {platform.machine()}",
    }
    root = os.geteuid() == 0
    caps["rlimit_nproc"] = {
        "available": True,
        "detail": "root: effective only because capabilities are dropped in the child"
        if root
        else "effective",
    }
    caps["drop_capabilities"] = {
        "available": True,
        "detail": "running as root; all capabilities dropped per call" if root else "not root",
    }
    return caps


def _seccomp_works(program: bytes) -> bool:
    """Try the filter in a throwaway child (seccomp cannot be undone)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            apply_seccomp(program)
            import socket

            try:
                socket.socket()
            except PermissionError:
                os._exit(0)
            os._exit(2)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def missing(caps: dict[str, object]) -> list[str]:
    """Names of layers this machine cannot provide."""
    return [
        name for name, info in caps.items() if isinstance(info, dict) and not info.get("available")
    ]
