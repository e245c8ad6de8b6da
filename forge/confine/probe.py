"""What this machine offers, probed once by the helper; every missing layer is
logged as a WARNING at start-up, never skipped silently."""

from __future__ import annotations

import os
import platform

from forge.confine.landlock import landlock_abi
from forge.confine.seccomp import apply_seccomp, seccomp_program


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
