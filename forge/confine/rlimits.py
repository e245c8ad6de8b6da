"""rlimits of one call: CPU, address space, open files, file size, no processes, no core;
and, once in the zygote, no raising of priority."""

from __future__ import annotations

import resource

from forge.protocol.limits import Limits


def apply_rlimits(limits: Limits) -> None:
    cpu = max(1, limits.cpu_s)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space, limits.address_space))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def forbid_priority_raise() -> None:
    """RLIMIT_NICE and RLIMIT_RTPRIO to 0 (soft and hard): without CAP_SYS_NICE this
    process and its children can then never lower their nice value nor take a
    real-time policy, whatever limits the daemon was started with (set once, in the
    zygote; forge.confine.sched only shortens a slice at an unchanged nice)."""
    resource.setrlimit(resource.RLIMIT_NICE, (0, 0))
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
