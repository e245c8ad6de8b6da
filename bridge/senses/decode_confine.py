"""How a decoder process confines itself before it touches a file (the forge's layers).

`confine(parent_pid, memory_bytes)` runs once in a decoder, after its
imports and before it takes its job. It reuses the tool sandbox's layers
(`forge.confine`), minus the workspace: a decoder may write nowhere.

- It dies with the daemon (`PR_SET_PDEATHSIG`), runs at a lower CPU
  priority (nice 10: the daemon's loop wins the CPU while files decode).
- rlimits: address space `memory_bytes` (`[limits] decode_memory_mb`), no
  file writes (RLIMIT_FSIZE 0; its stdout is a pipe), 16 descriptors, no new
  process, no core; the CPU limit is set per job (`limit_cpu`).
- Landlock: reads only beneath the Python roots (for a lazy import), no
  write, no TCP (ABI >= 4), no signals out (ABI >= 6).
- Capabilities dropped (a daemon run as root), then seccomp: no socket,
  connect, fork, exec, kill, ptrace, mount, ... (forge's list).

A layer the machine lacks is skipped and named in the decoder's ready
frame; the daemon logs it once. The file itself arrives already opened.
"""

from __future__ import annotations

import math
import os
import resource

from forge.confine.capabilities import drop_capabilities
from forge.confine.kernel import die_with_parent, set_no_new_privs, syscall
from forge.confine.landlock import (
    SYS_LANDLOCK_RESTRICT_SELF,
    landlock_abi,
    landlock_ruleset,
    open_roots,
    read_only_roots,
)
from forge.confine.rlimits import apply_rlimits
from forge.confine.seccomp import SeccompFilter, seccomp_program
from forge.protocol.limits import Limits

NICE = 10
OPEN_FILES = 16


def _landlock_read_only() -> bool:
    """Reads beneath the Python roots only, writes nowhere; False when unavailable."""
    abi = landlock_abi()
    if abi <= 0:
        return False
    fds = open_roots(read_only_roots())
    try:
        ruleset = landlock_ruleset(abi, fds)
    finally:
        for fd in fds:
            os.close(fd)
    try:
        set_no_new_privs()
        syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
    return True


def confine(parent_pid: int, memory_bytes: int) -> list[str]:
    """Apply every layer this machine has; return the names of those it lacks."""
    die_with_parent(parent_pid)
    os.nice(NICE)
    missing = [] if _landlock_read_only() else ["landlock"]  # opens the roots: before NOFILE
    apply_rlimits(Limits(3600, address_space=memory_bytes, open_files=OPEN_FILES, file_size=0))
    if os.geteuid() == 0:
        drop_capabilities()
    program = seccomp_program()
    if program is None:
        missing.append("seccomp")
    else:
        SeccompFilter(program).install()
    return missing


def limit_cpu(seconds: float) -> None:
    """The job's CPU budget on top of what the process has used: SIGXCPU past it."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(used.ru_utime + used.ru_stime + seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))
