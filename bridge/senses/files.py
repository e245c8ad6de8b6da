"""Opening an attachment the careful way: inside the tenant's inbox, no link, capped.

`open_checked(att, ctx)` opens `att.path` only when it lies directly under
the tenant's inbox (`TenantDirs.inbox`), with `O_NOFOLLOW`, as a regular
file with one link, of at most `[limits] attachment_bytes` (by `fstat`; a
platform's own download limit when that is smaller: `SenseContext.platform_bytes`,
from the platform's declaration), and not empty. The daemon reads no more of it
than `head` (the bytes a type is told from): the descriptor goes to a decoder
process, which reads the rest. Anything else is a `Refused` with a reason fit
to show the person.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from bridge.senses.handlers import SenseContext, megabytes, shown_name
from bridge.types.messages import Attachment


def byte_limit(ctx: SenseContext) -> int:
    """`[limits] attachment_bytes`, or the platform's own download limit when smaller."""
    platform = ctx.platform_bytes or ctx.limits.attachment_bytes
    return min(ctx.limits.attachment_bytes, platform)


class Refused(Exception):
    """The attachment cannot be used; the message is for the person."""


def too_large(att: Attachment, size: int, limit: int) -> str:
    return (
        f"📎 {shown_name(att)} is {megabytes(size)}; I can read files up to "
        f"{megabytes(limit)}. Please send a smaller one."
    )


def inside_inbox(att: Attachment, ctx: SenseContext) -> Path:
    """`att.path` when it names a file directly in this tenant's inbox, else `Refused`."""
    inbox = Path(os.path.abspath(ctx.turn.dirs.inbox))
    path = Path(os.path.abspath(att.path)) if att.path else None
    if path is None or path.parent != inbox:
        raise Refused(f"📎 {shown_name(att)} could not be received. Please send it again.")
    return path


def open_checked(att: Attachment, ctx: SenseContext) -> tuple[int, int]:
    """(an open read-only descriptor, the size) of the file; the caller closes it."""
    limit = byte_limit(ctx)
    path = inside_inbox(att, ctx)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        raise Refused(f"📎 {shown_name(att)} is no longer there. Please send it again.") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise Refused(f"📎 {shown_name(att)} is not a plain file; I cannot read it.")
        if info.st_size > limit:
            raise Refused(too_large(att, info.st_size, limit))
        if not info.st_size:
            raise Refused(f"📎 {shown_name(att)} is empty.")
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def head(fd: int, size: int = 65_536) -> bytes:
    """The first `size` bytes of the open file (what its type is told from)."""
    return os.pread(fd, size, 0)
