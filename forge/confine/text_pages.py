"""Let a fork copy the zygote's mapped code pages instead of every child faulting
them in again (issue 26).

At fork, Linux copies the page-table entries of a private mapping only if the
mapping has anonymous pages (an `anon_vma`; `vma_needs_copy` in mm/memory.c):
the code and read-only data of the interpreter and its shared objects have
none, so every child started with them unmapped and mapped again, fault by
fault, the code it ran (about 57 faults a child here, each mapping up to 16
pages around its address). Once such a mapping holds one anonymous page, a fork
copies all its present entries, and children start with the zygote's code
mapped.

`share_file_pages` gives each read-only private file mapping of this process
with pages present one such page: it writes the mapping's first byte back
unchanged through /proc/self/mem (the kernel's forced write to a private
mapping, as a debugger sets a breakpoint: a private copy of that one page; the
mapping stays read-only and never becomes writable). The contents stay as they
were; the cost is one page a mapping in the zygote (about 50 mappings) and, at
each fork, an entry copied for each present page of them. Best effort: a kernel
that refuses forced writes (`proc_mem.force_override=never`) leaves every
mapping as it was.
"""

from __future__ import annotations

import os
import re

SMAPS = "/proc/self/smaps"
MEM = "/proc/self/mem"
# "start-end perms offset dev inode path" (smaps' mapping line)
_HEAD = re.compile(r"^([0-9a-f]+)-[0-9a-f]+ (\S{4}) \S+ \S+ (\d+) +(/.*)?$")


def candidates(smaps: str) -> list[int]:
    """Start addresses of the mappings of `smaps` (a /proc/PID/smaps text) that are
    file-backed, private and not writable, with pages present and none anonymous."""
    found: list[int] = []
    start = rss = anon = -1

    def close() -> None:
        if start >= 0 and rss > 0 and anon == 0:
            found.append(start)

    for line in smaps.splitlines():
        head = _HEAD.match(line)
        if head is not None:
            close()
            addr, perms, inode, path = head.groups()
            eligible = perms[3] == "p" and "w" not in perms and inode != "0" and path
            start, rss, anon = (int(addr, 16) if eligible else -1), -1, -1
        elif line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("Anonymous:"):
            anon = int(line.split()[1])
    close()
    return found


def share_file_pages() -> int:
    """Give each read-only private file mapping with pages present and none
    anonymous one anonymous page (its first byte written back unchanged), so
    that forks copy its entries; the number of mappings done (0: refused)."""
    try:
        with open(SMAPS) as f:
            starts = candidates(f.read())
        fd = os.open(MEM, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return 0
    done = 0
    try:
        for start in starts:
            try:
                byte = os.pread(fd, 1, start)
                if len(byte) == 1 and os.pwrite(fd, byte, start) == 1:
                    done += 1
            except OSError:
                continue
    finally:
        os.close(fd)
    return done
