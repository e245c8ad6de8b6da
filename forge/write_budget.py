"""The per-call write budget: how many bytes one tool call may add to its
workspace (issue 21, item 4: one call wrote 192 MiB in 1.5 s).

Every file a tool opens for writing through the path gate is a buffered file
over `BudgetedRaw`, a `FileIO` whose `write` and `truncate` are charged BEFORE
the bytes reach the disk: a write that would make a file larger than the largest
size it had in this call costs the difference (rewriting a file in place, or
truncating it and writing it again, costs nothing more). Whatever the tool
writes through (`f.write`, `print(file=f)`, `json.dump`, `csv.writer`,
`pathlib.write_text`, `f.buffer.raw.write`), the raw object is this one.

Over the budget the write raises `WriteQuotaExceeded` (an OSError with errno
EDQUOT), the call ends with the error kind `quota` even if the tool catches it,
and nothing half-written stays: every file the call had open for writing when
the budget ran out (or opened after) is removed if this call created or
truncated it, else cut back to the length it had when opened. A file the tool
finished and closed before stays as written. RLIMIT_FSIZE (the per-file cap of
`Limits.file_size`) stays the kernel's backstop behind this count; a write it
refuses (EFBIG) is handled the same way.

A call may also make at most `MAX_NEW_ENTRIES` new files and folders (`created`,
counted as each is made): one call once made 17,515 empty files in its 5 s,
each an inode and a block of the disk, free of the byte count. Past the limit
the entry is not kept (a file this open just created is removed again) and
the call ends as above. Across calls `bridge.core.quota` counts each file and
folder as at least one block (`ENTRY_BYTES`).
"""

from __future__ import annotations

import errno
import io
import os
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

_MiB = 1024 * 1024
MAX_NEW_ENTRIES = 1000  # new files and folders one call may make


class GateOps(Protocol):
    """What `undo` needs of the path gate."""

    def identity(self, path: str) -> tuple[int, int]: ...
    def remove(self, path: object) -> None: ...
    def cut(self, path: str, key: tuple[int, int], size: int) -> None: ...


class WriteQuotaExceeded(OSError):
    """A write the call's budget (or the per-file size cap) does not allow."""


@dataclass(slots=True)
class Written:
    """One file opened for writing in this call."""

    path: str  # workspace-relative, as the gate resolved it
    key: tuple[int, int]  # (st_dev, st_ino)
    replaced: bool  # created or truncated by this call: undone by removing it
    initial: int  # its length when opened (undone by cutting back to it)
    append: bool
    open: bool = True
    partial: bool = False
    raw: io.FileIO | None = None  # while open: closed (unflushed) before an undo


def undo(budget: WriteBudget, gate: GateOps) -> list[str]:
    """After a call the budget stopped: remove every partial file this call
    created or truncated, cut every other partial file back to its length when
    opened. Each is found by its path and must still be the same file (device
    and inode); returns the paths undone."""
    done = []
    for rec in budget.files:
        if not rec.partial:
            continue
        if rec.raw is not None and not rec.raw.closed:
            rec.raw.close()  # its buffer is never flushed: every write is refused now
        try:
            if gate.identity(rec.path) != rec.key:
                continue  # renamed or replaced meanwhile: not the file this call wrote
            if rec.replaced:
                gate.remove(rec.path)
            else:
                gate.cut(rec.path, rec.key, rec.initial)
        except OSError:
            continue
        done.append(rec.path)
    return done


@dataclass(slots=True)
class WriteBudget:
    """Bytes left for one call, and what it has written."""

    limit: int
    file_size: int = 0  # the per-file cap (RLIMIT_FSIZE), for the message only
    left: int = field(init=False)
    high: dict[tuple[int, int], int] = field(default_factory=dict)
    files: list[Written] = field(default_factory=list)
    exceeded: str = ""  # why the budget stopped the call ("" while within it)
    entries_left: int = MAX_NEW_ENTRIES  # new files and folders this call may still make

    def __post_init__(self) -> None:
        self.left = self.limit

    def opened(self, path: str, st: os.stat_result, replaced: bool, append: bool) -> Written:
        key = (st.st_dev, st.st_ino)
        self.high.setdefault(key, st.st_size)
        rec = Written(path, key, replaced, st.st_size, append)
        rec.partial = bool(self.exceeded)
        self.files.append(rec)
        return rec

    def created(self, what: str) -> None:
        """Count a file or folder this call just made (`what` names it for the message)."""
        if self.entries_left <= 0:
            self.stop(
                f"the tool made more than {MAX_NEW_ENTRIES} files or folders in one call (the "
                f"per-call limit; {what!r} was one too many)"
            )
        self.entries_left -= 1

    def grow(self, rec: Written, end: int) -> None:
        """Charge a write or truncate that makes `rec`'s file `end` bytes long."""
        if rec.partial and self.exceeded:
            raise WriteQuotaExceeded(errno.EDQUOT, self.exceeded)
        high = self.high[rec.key]
        if end <= high:
            return
        if end - high > self.left:
            self.stop(
                f"the tool tried to write more than {_size(self.limit)} in one call "
                "(the per-call write limit)"
            )
        self.left -= end - high
        self.high[rec.key] = end

    def stop(self, why: str) -> None:
        """Over the budget: every file still open for writing is partial."""
        if not self.exceeded:
            self.exceeded = why
        for rec in self.files:
            if rec.open:
                rec.partial = True
        raise WriteQuotaExceeded(errno.EDQUOT, self.exceeded)

    def message(self, removed: list[str]) -> str:
        kept = "nothing was kept of the files it was writing"
        if removed:
            kept += " (" + ", ".join(sorted(set(removed))[:10]) + ")"
        return f"{self.exceeded}; {kept}"


def _size(n: int) -> str:
    for unit, name in ((_MiB, "MiB"), (1024, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n} bytes"


class BudgetedRaw(io.FileIO):
    """A `FileIO` whose writes are charged to the call's budget first."""

    def __init__(self, fd: int, mode: str, budget: WriteBudget, rec: Written) -> None:
        super().__init__(fd, mode, closefd=True)
        self._budget = budget
        self._rec = rec
        rec.raw = self

    def write(self, data: Any, /) -> int:
        size = memoryview(data).nbytes
        start = os.fstat(self.fileno()).st_size if self._rec.append else self.tell()
        self._budget.grow(self._rec, start + size)
        try:
            written: int = super().write(data)
        except OSError as exc:
            if exc.errno != errno.EFBIG:
                raise
            cap = self._budget.file_size
            self._budget.stop(f"a file may hold at most {_size(cap)} (File too large)")
            raise  # not reached: stop() raises
        return written

    def truncate(self, size: int | None = None) -> int:
        self._budget.grow(self._rec, self.tell() if size is None else size)
        return super().truncate(size)

    def close(self) -> None:
        self._rec.open = False
        self._rec.raw = None
        super().close()


def wrap(
    fd: int,
    mode: str,
    budget: WriteBudget,
    rec: Written,
    encoding: str | None,
    errors: str | None,
    newline: str | None,
) -> IO[Any]:
    """The file object a tool gets for a writable `fd` (mode as the gate parsed it)."""
    raw_mode = mode.replace("b", "").replace("t", "").replace("x", "w")
    try:
        raw = BudgetedRaw(fd, raw_mode, budget, rec)
    except BaseException:
        os.close(fd)
        raise
    try:
        buffered: io.BufferedRandom | io.BufferedWriter = (
            io.BufferedRandom(raw) if "+" in mode else io.BufferedWriter(raw)
        )
        if "b" in mode:
            return buffered
        text = io.TextIOWrapper(buffered, encoding or "utf-8", errors, newline)
    except BaseException:
        raw.close()
        raise
    text.mode = mode  # type: ignore[misc]
    return text
