"""Where `roost chat` logs: a private file under the home, never into the conversation.

`roost chat` shows only the conversation. Its log lines (warnings and
errors: the chat logs as quietly as the other operator commands) and
Python's `warnings` go to `$ROOST_HOME/logs/chat.log` (mode 0600, the
directory 0700), through the same redacting formatter and flood limit as
every roost log (`bridge.app.logging_setup`): only the handler's stream
changes. A crash's traceback and roost's exit messages stay on stderr, in
the terminal. `ChatLog.notice()` is the one line a turn that logged
something shows after it: how many warnings and where to read them.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TextIO

LOG_DIR = "logs"
LOG_NAME = "chat.log"


class _Count(logging.Handler):
    """Counts the warnings and errors logged; writes nothing."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


class ChatLog:
    """The chat's log file and what has been said about it."""

    def __init__(self, path: Path, counter: _Count) -> None:
        self.path, self._counter, self._told = path, counter, 0

    def notice(self) -> str | None:
        """`(N warnings in PATH)` when something was logged since the last notice."""
        new, self._told = self._counter.count - self._told, self._counter.count
        if not new:
            return None
        return f"({new} warning{'s' * (new != 1)} in {self.path})"


def _private_stream(path: Path) -> TextIO:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "a", encoding="utf-8", errors="replace", buffering=1)


def log_to_file(home: Path) -> ChatLog | None:
    """Point roost's log handler at `home/logs/chat.log`; None (stderr stays) if it cannot."""
    path = home / LOG_DIR / LOG_NAME
    try:
        stream = _private_stream(path)
    except OSError:
        return None  # an unusable home: building the roost says so
    root = logging.getLogger()
    for handler in root.handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream in (
            sys.stderr,
            sys.__stderr__,
        ):
            handler.setStream(stream)
    counter = _Count()
    root.addHandler(counter)
    logging.captureWarnings(True)
    return ChatLog(path, counter)
