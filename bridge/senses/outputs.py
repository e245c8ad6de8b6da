"""Files out: what a tool wrote into `outputs/` during a turn goes out with the reply.

`seen(outputs)` lists the directory's regular files (name, mtime, size; no
symbolic links, no hidden temp files) before the turn; `new_files` lists
them again after it and returns the new or changed ones as `OutFile`s (at
most `MAX_FILES`, by name). The core checks each again before it leaves
(`bridge.core.outfiles.confine`); the channel sends images as photos where
it can.
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path

from bridge.types.messages import OutFile

MAX_FILES = 10
Seen = frozenset[tuple[str, int, int]]
KNOWN = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
    ".csv": "text/csv",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".json": "application/json",
    ".pdf": "application/pdf",
}


def seen(outputs: Path) -> Seen:
    """(name, mtime_ns, size) of every regular file directly in `outputs`."""
    found = set()
    try:
        with os.scandir(outputs) as entries:
            for entry in entries:
                if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
                    continue
                info = entry.stat(follow_symlinks=False)
                found.add((entry.name, info.st_mtime_ns, info.st_size))
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()
    return frozenset(found)


def mime_of(name: str) -> str:
    suffix = Path(name).suffix.lower()
    guessed = KNOWN.get(suffix) or mimetypes.guess_type(name, strict=True)[0]
    return guessed or "application/octet-stream"


def new_files(outputs: Path, before: Seen) -> tuple[OutFile, ...]:
    """The files of `outputs` that are new or changed since `before`."""
    fresh = sorted({name for name, _, _ in seen(outputs) - before})[:MAX_FILES]
    return tuple(OutFile(outputs / name, name, mime_of(name)) for name in fresh)
