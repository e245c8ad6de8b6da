"""Landlock (kernel >= 5.13, unprivileged): writes only beneath the workspace,
reads there and in the Python roots; network and signal scoping on newer ABIs."""

from __future__ import annotations

import ctypes
import os
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from forge.confine.kernel import set_no_new_privs, syscall

# generic syscall numbers, same on x86_64 and aarch64
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

FORGE_PACKAGE = Path(__file__).resolve().parent.parent  # forge/, which the child may import


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The Landlock ABI version, 0 when the kernel lacks it."""
    try:
        return syscall(
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


def read_only_roots() -> list[str]:
    """Directories the child may read: the standard library and site-packages
    (for lazy imports) and the forge package itself; nothing else."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.add(os.path.join(paths["platstdlib"], "lib-dynload"))
    roots.add(str(FORGE_PACKAGE))
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
    # REFER on the workspace rule only: os.rename between two workspace folders
    # works; nothing moves in from or out to a read-only root (they lack REFER),
    # and hard links stay refused (seccomp: link/linkat; the gate: st_nlink).
    write |= FS_REFER
    if abi >= 3:
        write |= FS_TRUNCATE
    return handled, read & handled, write & handled


def _add_path_rule(ruleset: int, fd: int, allowed: int) -> None:
    rule = _PathBeneath(allowed, fd)
    syscall(
        SYS_LANDLOCK_ADD_RULE,
        ruleset,
        LANDLOCK_RULE_PATH_BENEATH,
        ctypes.byref(rule),
        ctypes.c_uint32(0),
    )


@dataclass(frozen=True, slots=True)
class RulesetArgs:
    """The arguments of the system calls that build a ruleset with the read-only
    roots, made once for an ABI and a set of root descriptors. The helper makes
    them before its zygote forks and every sandbox child uses them as they are:
    a child then makes no ctypes object to build its ruleset (every object a
    fresh child makes copies the pages it is written to; issue 26)."""

    attr: ctypes.c_void_p  # to the ruleset's attribute struct (`_keep[0]`)
    size: ctypes.c_size_t
    flags: ctypes.c_uint32
    rules: tuple[ctypes.c_void_p, ...]  # to one path-beneath rule per root
    workspace: _PathBeneath  # the workspace rule, its descriptor set by the child
    workspace_rule: ctypes.c_void_p  # to `workspace`
    _keep: tuple[ctypes.Structure, ...]  # what the pointers point to


def ruleset_args(abi: int, read_fds: Sequence[int]) -> RulesetArgs:
    handled, read, _ = _landlock_access(abi)
    attr = _RulesetAttr(
        handled,
        NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0,
    )
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    rules = tuple(_PathBeneath(read, fd) for fd in read_fds)
    workspace = _PathBeneath(_landlock_access(abi)[2], -1)
    return RulesetArgs(
        ctypes.c_void_p(ctypes.addressof(attr)),
        ctypes.c_size_t(size),
        ctypes.c_uint32(0),  # the kernel makes ruleset descriptors close-on-exec
        tuple(ctypes.c_void_p(ctypes.addressof(rule)) for rule in rules),
        workspace,
        ctypes.c_void_p(ctypes.addressof(workspace)),
        (attr, *rules),
    )


def landlock_ruleset(abi: int, read_fds: Sequence[int]) -> int:
    """A new Landlock ruleset with the read-only roots; the workspace rule is not in it
    (`create_ruleset` with arguments made now)."""
    return create_ruleset(ruleset_args(abi, read_fds))


def create_ruleset(args: RulesetArgs) -> int:
    """A new Landlock ruleset with the read-only roots; the workspace rule is not in it.

    Built by each sandbox child for itself, before its call arrives, so it never
    holds a workspace rule of another call: a ruleset is a kernel object shared by
    every descriptor that refers to it, so one built in the helper and inherited
    would collect every child's workspace rule (only the calls' arguments are
    shared, `RulesetArgs`). `landlock_restrict` adds the workspace and applies it.
    """
    ruleset = syscall(SYS_LANDLOCK_CREATE_RULESET, args.attr, args.size, args.flags)
    try:
        for rule in args.rules:
            syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, rule, args.flags)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def landlock_restrict(
    abi: int, ruleset: int, workspace_fd: int, args: RulesetArgs | None = None
) -> None:
    """Add the workspace (read/write) to `ruleset`, enforce it on this process, close it.
    `args`: the prepared arguments (`ruleset_args`; its workspace rule is filled in
    here: only in a process that runs one call, a sandbox child)."""
    try:
        if args is None:
            _add_path_rule(ruleset, workspace_fd, _landlock_access(abi)[2])
        else:
            args.workspace.parent_fd = workspace_fd
            rule = args.workspace_rule
            syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, rule, args.flags)
        set_no_new_privs()
        syscall(
            SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0) if args is None else args.flags
        )
    finally:
        os.close(ruleset)


def apply_landlock(abi: int, workspace_fd: int, read_fds: Sequence[int]) -> None:
    """Writes only under the workspace; reads only there and in the Python roots.

    No symlinks, device nodes, FIFOs or sockets may be made anywhere, no file
    may be executed, cross-directory renames only inside the workspace; with
    ABI >= 4 all TCP bind/connect, with ABI >= 6 signals and abstract UNIX
    sockets outside the sandbox.
    """
    landlock_restrict(abi, landlock_ruleset(abi, read_fds), workspace_fd)
