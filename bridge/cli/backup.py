"""`roost backup DEST` and `roost restore SRC`: the command-line side of `bridge.app.backup`.

Exit codes: 0 done (files that vanished during `backup` are counted, not an
error), 1 backup: files left out (paths too long), 2 refused (a non-empty
destination or home, a damaged, incomplete or invalid backup, a file changed
during the restore); the message says why and what to do.
"""

from __future__ import annotations

import argparse
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
    try:
        result = backup(settings.home, args.dest)
    except BackupError as exc:
        print(f"roost backup: {exc}", file=sys.stderr)
        return 2
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
