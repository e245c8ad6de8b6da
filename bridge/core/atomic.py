"""Atomic file writes for the loadout, on top of `forge.atomic`.

Temp file in the same directory, fsync, rename, fsync the directory: readers
see the old file or the new one, never half of either. If any step fails the
write failed and the error propagates. Loadout files are private (0600).
"""

from __future__ import annotations

from pathlib import Path

from forge.atomic import TMP_PREFIX, fsync_dir, remove_orphan_temps, write_atomic

__all__ = ["TMP_PREFIX", "fsync_dir", "remove", "remove_orphan_temps", "write_bytes", "write_text"]


def write_text(path: Path, text: str, mode: int = 0o600) -> None:
    """Replace `path` with `text` (UTF-8) atomically; the new file gets `mode`."""
    write_atomic(path, text.encode("utf-8"), mode)


def write_bytes(path: Path, data: bytes, mode: int = 0o600) -> None:
    write_atomic(path, data, mode)


def remove(path: Path) -> bool:
    """Delete `path` durably; False if it was not there."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True
