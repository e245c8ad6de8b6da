"""Paths a terminal pasted into a line: a dropped file, quoted or escaped as a shell reads it.

A terminal pastes a dropped file as its path, quoted or escaped the way a
shell would read it: GNOME Terminal and Konsole `'/path/my file.pdf'`,
iTerm2 and kitty `/path/my\\ file.pdf`, some as a `file://` URI. `dropped(line)`
takes such paths from the start and the end of a line when they name
existing regular files (`/`, `~/` or `file://` first); a path in the middle
of a sentence stays text, and so does a path that names no file. Pure but
for `is_file`, which `dropped` takes as a parameter.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

SCAN_LIMIT = 8192  # longer lines are not searched for dropped paths
PATHISH = ("/", "~/", "file://", "'/", "'~/", "'file://", '"/', '"~/', '"file://')


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word of a line: its text after quotes and escapes, and where it was."""

    text: str
    start: int
    end: int


class _OpenQuote(Exception):
    pass


def _scan(line: str) -> Iterator[Word]:
    """The words of `line` one by one; `_OpenQuote` where a quote is never closed."""
    i, n = 0, len(line)
    while i < n:
        if line[i].isspace():
            i += 1
            continue
        start, text = i, []
        while i < n and not line[i].isspace():
            c = line[i]
            if c == "'":
                close = line.find("'", i + 1)
                if close < 0:
                    raise _OpenQuote
                text.append(line[i + 1 : close])
                i = close + 1
            elif c == '"':
                i += 1
                while i < n and line[i] != '"':
                    if line[i] == "\\" and i + 1 < n and line[i + 1] in '"\\$`':
                        i += 1
                    text.append(line[i])
                    i += 1
                if i >= n:
                    raise _OpenQuote
                i += 1
            elif c == "\\" and i + 1 < n:
                text.append(line[i + 1])
                i += 2
            else:
                text.append(c)
                i += 1
        yield Word("".join(text), start, i)


def words(line: str) -> list[Word] | None:
    """The line split as a POSIX shell splits words (`'…'`, `"…"`, `\\x`); None when a
    quote is left open (then the line is prose with an apostrophe, not pasted paths)."""
    try:
        return list(_scan(line))
    except _OpenQuote:
        return None


def local_path(word: str) -> Path | None:
    """The file a pasted word names (`/…`, `~/…`, `file:///…`), or None for other words."""
    if word.startswith("file://"):
        parts = urlsplit(word)
        if parts.netloc not in ("", "localhost"):
            return None
        word = unquote(parts.path)
    elif word.startswith("~/"):
        word = os.path.expanduser(word)
    if not word.startswith("/"):
        return None
    return Path(word)


def is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def _files(text: str, exists: Callable[[Path], bool]) -> Iterator[tuple[Word, Path]]:
    """The words of `text` from its start while each names an existing file."""
    try:
        for word in _scan(text):
            path = local_path(word.text)
            if path is None or not exists(path):
                return
            yield word, path
    except _OpenQuote:
        return


def dropped(line: str, exists: Callable[[Path], bool] = is_file) -> tuple[str, list[Path]]:
    """(the line without them, the files) for paths pasted at its start or its end."""
    if len(line) > SCAN_LIMIT:
        return line, []
    seen: dict[Path, bool] = {}

    def known(path: Path) -> bool:
        if path not in seen:
            seen[path] = exists(path)
        return seen[path]

    tail_at, tail = len(line), []
    for i in range(len(line)):  # the longest run of files that ends the line
        if (i and not line[i - 1].isspace()) or not line.startswith(PATHISH, i):
            continue
        found = list(_files(line[i:], known))
        if found and found[-1][0].end + i == len(line.rstrip()):
            tail_at, tail = i, [path for _, path in found]
            break
    head = list(_files(line[:tail_at], known))  # the run of files that starts it
    head_end = head[-1][0].end if head else 0
    if not head and not tail:
        return line, []
    return line[head_end:tail_at].strip(), [path for _, path in head] + tail
