"""seccomp: a BPF program (x86_64) answering EPERM to the syscalls a tool child
never needs (network, new processes, exec, tracing, namespaces, mounts, ...)."""

from __future__ import annotations

import ctypes
import platform
import struct

from forge.confine.kernel import set_no_new_privs, syscall

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
}
CLONE3_X86_64 = 435  # answered with ENOSYS so libc falls back to (blocked) clone


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
        syscall(self._nr, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(self._fprog))


def apply_seccomp(program: bytes) -> None:
    SeccompFilter(program).install()
