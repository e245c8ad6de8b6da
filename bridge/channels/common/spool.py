"""A file arriving in a tenant's inbox: spooled to a private temporary file, then kept
under its final name or removed; and the sender's file name made safe to show.
Shared by web uploads and terminal attachments; a file a platform downloaded
(WhatsApp, Matrix) is stored whole with `store_in_inbox`."""

from __future__ import annotations

import contextlib
import mimetypes
import os
import re
import secrets
import unicodedata
from pathlib import Path
from urllib.parse import unquote

NAME_MAX = 120
SUFFIX = re.compile(r"^\.[a-z0-9]{1,8}$")  # what a stored file's name may end with


def display_name(raw: str | None, fallback: str) -> str:
    """The client's file name, safe to show: percent-escapes decoded (browsers escape
    `"` and line breaks, aiohttp more), its last path piece, no control characters,
    at most NAME_MAX characters; `fallback` when nothing is left."""
    base = re.split(r"[\\/]", unquote(raw or ""))[-1]
    cleaned = "".join(c for c in base if unicodedata.category(c)[0] != "C").strip()
    return cleaned[:NAME_MAX] or fallback


class Spool:
    """One upload on its way to disk: a private temporary file in the inbox, kept
    under its final name or removed. Plain blocking calls: the slow ones (the
    directory, fsync) are run in a thread by the caller."""

    def __init__(self, inbox: Path, ident: str) -> None:
        inbox.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = inbox / f".web-{ident}.part"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)

    def write(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view:  # os.write: a full disk raises here, not at a later flush
            view = view[os.write(self._fd, view) :]

    def finish(self) -> None:
        os.fsync(self._fd)
        self._close()

    def keep(self, final: Path) -> None:
        os.replace(self.path, final)

    def discard(self) -> None:
        self._close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def inbox_suffix(name: str | None, mime: str) -> str:
    """The suffix a stored file gets: the sender's, or the MIME type's; "" if neither is plain."""
    suffix = Path(name.lower()).suffix if name else ""
    if not SUFFIX.fullmatch(suffix):
        suffix = mimetypes.guess_extension(mime) or ""
    return suffix if SUFFIX.fullmatch(suffix) else ""


def store_in_inbox(inbox: Path, data: bytes, suffix: str) -> Path:
    """Write a downloaded file into the inbox under a random name, atomically (blocking)."""
    inbox.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = secrets.token_hex(8) + suffix
    tmp = inbox / f".{name}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, inbox / name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return inbox / name
