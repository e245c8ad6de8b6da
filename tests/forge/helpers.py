"""Helpers for forge tests."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def tool(body: str, params: str = "", imports: str = "") -> str:
    """Wrap a function body into a valid tool module."""
    lines = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f'{imports}\n\ndef run({params}):\n    """Test tool."""\n{lines}\n'


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (a zygote's children)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def parent_of(pid: int) -> int:
    """The parent pid of a live process (a forked helper's is its template's)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def descriptors(pid: int) -> dict[int, str]:
    """What each open descriptor of `pid` names ("pipe:[123]", "socket:[45]", a path);
    one closed while it is listed is skipped (helpers and zygotes keep working)."""
    named = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):
            named[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
    return named
