"""`roost backup DEST` and `roost restore SRC`: the command-line side of `bridge.app.backup`.

Exit codes: 0 done (files that vanished during `backup` are counted, not an
error), 1 backup: files left out (paths too long), 2 refused (a non-empty
destination or home, a damaged, incomplete or invalid backup, a file changed
during the restore); the message says why and what to do. A backup that
fails (refused after it began, a damaged database, a full disk) removes what
it wrote, so DEST can be given again.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from bridge.app.backup import PATH_MAX, BackupError, backup, restore
from bridge.core.config import Settings
from bridge.core.words import count


def backup_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dest", type=Path, help="a new or empty directory for the copy")


def restore_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", type=Path, help="a directory written by `roost backup`")


def run_backup(args: argparse.Namespace, settings: Settings) -> int:
    made = _made_by_us(args.dest)
    try:
        result = backup(settings.home, args.dest)
    except BackupError as exc:
        _remove(made)
        print(f"roost backup: {exc}", file=sys.stderr)
        return 2
    except BaseException:  # a damaged database, a full disk, Ctrl-C: no half copy stays
        _remove(made)
        raise
    print(
        f"backed up {settings.home} to {result.dest}: {count(result.files, 'file')}, "
        f"{count(result.bytes, 'byte')}, audit chain up to record {result.audit_seq}"
    )
    if result.vanished:  # deleted by their owner (the daemon's cleanup) while the copy ran
        print(
            f"note: {count(result.vanished, 'file')} vanished while the copy was taken "
            "(deleted by the daemon's cleanup or a tool as it ran, or no longer a regular "
            "file): not in the backup, nothing else was left out"
        )
    if result.left_out:
        first = result.left_out[0]
        shown = first if len(first) <= 120 else f"{first[:80]}...{first[-30:]}"
        print(
            f"roost backup: NOT copied: {count(len(result.left_out), 'file')} whose path is "
            f"longer than the system allows ({PATH_MAX} bytes), e.g. {shown}. Move or delete "
            "them (the sandbox keeps a tool's paths within 1,024 bytes; these were made "
            "another way, or before it did) and back up again.",
            file=sys.stderr,
        )
        return 1
    return 0


def _made_by_us(dest: Path) -> tuple[Path, bool] | None:
    """What a failed backup into `dest` removes: the first folder of its path that does
    not exist yet (the whole of it), or `dest` itself when it is an empty folder (its
    contents only); None when `dest` holds something (the backup refuses it)."""
    dest = dest.absolute()
    if dest.is_dir():
        try:
            empty = not any(dest.iterdir())
        except OSError:
            return None
        return (dest, False) if empty else None
    top = None
    for path in (dest, *dest.parents):
        if path.exists() or path.is_symlink():
            break
        top = path
    return (top, True) if top is not None else None


def _remove(made: tuple[Path, bool] | None) -> None:
    """Undo a failed backup's files (`_made_by_us`), as far as they can be removed."""
    if made is None:
        return
    path, whole = made
    if whole:
        shutil.rmtree(path, ignore_errors=True)
        return
    for child in list(path.iterdir()) if path.is_dir() else []:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def run_restore(args: argparse.Namespace, settings: Settings) -> int:
    try:
        restored = restore(args.src, settings.home)
    except BackupError as exc:
        print(f"roost restore: {exc}", file=sys.stderr)
        return 2
    print(
        f"restored {count(restored, 'file')} from {args.src} into {settings.home}; check with "
        "`roost audit verify`"
    )
    return 0
