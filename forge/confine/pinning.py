"""Pages every child writes, copied at the fork instead of on each child's first write.

A child is a copy-on-write copy of its zygote: each page it writes is copied on a
page fault, about 400 of them while it waits for its call (reference counts,
allocator pools, interpreter state), at 2.3-3.8 µs a fault in this VM. The kernel
copies a page at the fork itself, without any fault, when the parent's page may be
pinned for DMA (`folio_try_dup_anon_rmap`, Linux 5.11+). So the zygote learns which
pages a waiting child writes (`written_pages`: the pages of a probe child that are
no longer shared, from /proc/PID/pagemap) and pins its own copies of them
(`pin_pages`: registered as the buffers of an io_uring instance, which pins them for
as long as its descriptor stays open; the ring is never used for I/O). Every later
child then starts with its own copies of those pages: the same pages, copied by the
fork instead of by faults, and the zygote's own writes to them no longer fault
either (a pinned page is never shared).

Nothing about what a child holds changes: each child still has its own private copy
of every page it writes, made before any call reaches it; the ring's descriptor is
the zygote's and every child closes it (forge.child closes every descriptor it did
not ask for), and seccomp refuses io_uring to children. When any step fails (no
io_uring: kernel.io_uring_disabled, a systemd filter, RLIMIT_MEMLOCK), nothing is
pinned and children copy their pages on faults as before.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Iterable

from forge.confine.kernel import syscall

# generic syscall numbers, the same on x86_64 and aarch64
SYS_IO_URING_SETUP = 425
SYS_IO_URING_REGISTER = 427
IORING_REGISTER_BUFFERS = 0
IO_URING_PARAMS_SIZE = 120  # struct io_uring_params
MAX_BUFFERS = 1 << 14  # IORING_MAX_REG_BUFFERS
PAGE = os.sysconf("SC_PAGE_SIZE")
_PRESENT = 1 << 63
_EXCLUSIVE = 1 << 56  # PM_MMAP_EXCLUSIVE: mapped by this process alone
_SKIPPED = ("[stack]", "[vvar]", "[vvar_vclock]", "[vdso]", "[vsyscall]")


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def written_pages(pid: int) -> list[int]:
    """Addresses of the pages of `pid` (a child of this process) in its writable
    private mappings that it no longer shares: those it wrote since the fork (or
    made). The stack and the kernel's special mappings are left out."""
    pages: list[int] = []
    with open(f"/proc/{pid}/maps") as maps:
        rows = [line.split() for line in maps]
    fd = os.open(f"/proc/{pid}/pagemap", os.O_RDONLY | os.O_CLOEXEC)
    try:
        for row in rows:
            if row[1][1] != "w" or row[1][3] != "p" or (len(row) > 5 and row[5] in _SKIPPED):
                continue
            low, high = (int(x, 16) for x in row[0].split("-"))
            entries = os.pread(fd, (high - low) // PAGE * 8, low // PAGE * 8)
            for i, (entry,) in enumerate(struct.iter_unpack("<Q", entries)):
                if entry & _PRESENT and entry & _EXCLUSIVE:
                    pages.append(low + i * PAGE)
    finally:
        os.close(fd)
    return pages


def page_ranges(pages: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted page addresses as (start, length) runs of contiguous pages."""
    runs: list[list[int]] = []
    for page in sorted(set(pages)):
        if runs and runs[-1][0] + runs[-1][1] == page:
            runs[-1][1] += PAGE
        else:
            runs.append([page, PAGE])
    return [(start, length) for start, length in runs]


def pin_pages(pages: Iterable[int]) -> int:
    """Pin this process's `pages` (addresses in its own writable mappings) for as long
    as the returned descriptor stays open; OSError when it cannot (nothing pinned)."""
    runs = page_ranges(pages)[:MAX_BUFFERS]
    if not runs:
        raise OSError(0, "no pages to pin")
    params = ctypes.create_string_buffer(IO_URING_PARAMS_SIZE)
    ring = syscall(SYS_IO_URING_SETUP, 1, params)
    try:
        vec = (_IoVec * len(runs))(*(_IoVec(start, length) for start, length in runs))
        syscall(SYS_IO_URING_REGISTER, ring, IORING_REGISTER_BUFFERS, vec, len(runs))
    except BaseException:
        os.close(ring)
        raise
    return ring
