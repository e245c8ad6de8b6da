"""The terminal's input history: a prompt_toolkit history file, private and capped.

The file is prompt_toolkit's `FileHistory` format (`+line` rows after a `#`
stamp) so its reader and writer are reused; this class adds what roost needs:
the file is created mode 0600 (it holds what a person typed), and at load it
keeps only the newest `cap` entries, rewriting the file atomically when it
had more. It lives in the tenant's directory beside `global/`
(`tenants/<tid>/terminal-history`), so `roost forget` removes it with the rest.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from prompt_toolkit.history import FileHistory

HISTORY_CAP = 1000


def _entry(text: str) -> str:
    return "\n#\n" + "".join(f"+{line}\n" for line in text.split("\n"))


class CappedHistory(FileHistory):
    """`FileHistory` with mode 0600 and at most `cap` entries kept across runs."""

    def __init__(self, path: Path, cap: int = HISTORY_CAP) -> None:
        super().__init__(str(path))
        self.path, self.cap = path, cap

    def load_history_strings(self) -> Iterable[str]:
        newest_first = list(super().load_history_strings())
        if len(newest_first) > self.cap:
            newest_first = newest_first[: self.cap]
            self._rewrite(reversed(newest_first))
        return newest_first

    def store_string(self, string: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "ab") as fh:
            os.fchmod(fd, 0o600)
            fh.write(_entry(string).encode("utf-8", errors="replace"))

    def _rewrite(self, oldest_first: Iterable[str]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write("".join(_entry(s) for s in oldest_first).encode("utf-8", errors="replace"))
            fh.flush()
            os.fsync(fd)
        os.replace(tmp, self.path)
