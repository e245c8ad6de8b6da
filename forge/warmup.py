"""What every call of a helper shares, prepared once before any request exists."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from forge.bound_self import library_classes, protect
from forge.child import HelperContext, WarmFile
from forge.confine.landlock import (
    FORGE_PACKAGE,
    landlock_abi,
    open_roots,
    read_only_roots,
    ruleset_args,
)
from forge.confine.probe import probe
from forge.confine.seccomp import SeccompFilter, child_program, seccomp_program, zygote_program
from forge.layers import Layers
from forge.modules import ALLOWED, SHIMMED, SOURCES, build_proxies
from forge.policy.globals import safe_builtins
from forge.policy.guards import judge_modules
from forge.policy.verdict import judge

_PREWARM = (
    "_strptime",
    "encodings.latin_1",
    "encodings.ascii",
    "encodings.utf_16",
    "encodings.utf_8_sig",
    "encodings.cp1252",
    "unicodedata",
    "_json",
)


def prepare(
    layers: Layers | None = None, answer_fd: int = -1, warm: bool = True
) -> tuple[HelperContext, dict[str, Any]]:
    """Warm imports, module proxies (their attributes judged once), the seccomp
    program, the read-only roots; and the machine's capabilities. `answer_fd`: the
    runner's answer socket, which the children inherit (forge.protocol.answers; -1:
    none). `warm` False: waiting children do not warm their call's path
    (forge.child; for measurements only)."""
    for name in _PREWARM:
        with contextlib.suppress(ImportError):
            __import__(name)
    caps = probe()
    abi = landlock_abi()
    roots = read_only_roots() if abi else []
    read_fds = tuple(open_roots(roots))
    program = seccomp_program()
    zygote_part, child_part = zygote_program(), child_program()
    proxies = build_proxies()
    ctx = HelperContext(
        proxies=proxies,
        devnull=os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC),
        read_fds=read_fds,
        landlock_abi=abi,
        seccomp=SeccompFilter(program)
        if program is not None and caps["seccomp"]["available"]  # type: ignore[index]
        else None,
        builtins=safe_builtins(),
        layers=layers or Layers(),
        helper_pid=os.getpid(),
        answer_fd=answer_fd,
        warm=warm,
        ruleset=ruleset_args(abi, read_fds) if abi else None,
        judged=judge_modules(proxies),
        warm_file=_warm_file(roots, read_fds),
        seccomp_pair=(SeccompFilter(zygote_part), SeccompFilter(child_part))
        if zygote_part is not None and child_part is not None
        else None,
    )
    return ctx, caps


def _warm_file(roots: list[str], fds: tuple[int, ...]) -> WarmFile | None:
    """forge's own `__init__.py`, in the read-only root of the forge package: the
    file a waiting child reads through a path gate to warm that path (forge.child
    `_warm_reading`); None without that root (no Landlock: no roots opened)."""
    forge_root = os.path.realpath(FORGE_PACKAGE)
    if forge_root not in roots:
        return None
    return WarmFile(fds[roots.index(forge_root)], forge_root, "__init__.py")


def protect_library(proxies: dict[str, Any]) -> int:
    """In a helper only (forge.worker), before its zygote forks: the Python methods
    of every library class a tool can reach refuse a `self` of another class
    (forge.bound_self). Those forge.policy.verdict refuses by identity stay the
    objects it knows. Returns how many methods were replaced."""
    modules = [m for m in ALLOWED if m not in SHIMMED and m not in SOURCES]
    offered = [value for proxy in proxies.values() for value in vars(proxy).values()]
    return protect(library_classes(modules, offered), _refused)


def _refused(func: Any) -> bool:
    try:
        judge(func, func.__name__)
    except AttributeError:
        return True
    return False
