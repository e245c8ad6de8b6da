"""Scheduling hints for the processes on a call's path (Linux 6.12+, EEVDF).

`set_slice(pid, ns)` asks the fair scheduler for a shorter time slice for `pid`
(sched_setattr(2), SCHED_OTHER with `sched_runtime` as the slice, as the kernel
reads it since 6.12). It gives no process more CPU than its fair share: a task
with a shorter slice gets an earlier virtual deadline, so when it wakes up it
runs sooner (preempting a task with a longer slice), and it is preempted sooner
too. Unprivileged for a process of the same user; older kernels accept the
field and ignore it. A hint only: any failure is ignored (False).
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

from forge.confine.kernel import libc

SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}.get(platform.machine())
# struct sched_attr (version 0, 48 bytes): size, policy, flags, nice, priority,
# runtime, deadline, period
_ATTR = struct.Struct("<IIQiIQQQ")
SCHED_OTHER = 0
CALL_SLICE_NS = 100_000  # the shortest slice the kernel takes (0.1 ms)


def set_slice(pid: int, ns: int) -> bool:
    """Ask for a time slice of `ns` nanoseconds for `pid` (0: this process) at its
    current nice value; False if the kernel refused (or has no such call here)."""
    if SYS_SCHED_SETATTR is None:
        return False
    try:
        nice = os.getpriority(os.PRIO_PROCESS, pid)
    except OSError:
        return False
    attr = ctypes.create_string_buffer(_ATTR.pack(_ATTR.size, SCHED_OTHER, 0, nice, 0, ns, 0, 0))
    return int(libc.syscall(SYS_SCHED_SETATTR, pid, attr, 0)) == 0
