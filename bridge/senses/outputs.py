"""Files out: what a tool wrote into `outputs/` during a turn goes out with the reply.

`seen(outputs)` lists the directory's regular files (name, mtime, size; no
symbolic links, no hidden temp files) before the turn and again after it;
`new_files` returns the new or changed ones as `OutFile`s (at
most `MAX_FILES`, by name). The core checks each again before it leaves
(`bridge.core.outfiles.confine`); the channel sends images as photos where
it can. A file is handed out under `shown_name(name)`: each control or format
character (Unicode Cc and Cf: newlines, bidi overrides such as U+202E, zero
widths), line or paragraph separator, or lone surrogate (a name that is no
UTF-8) becomes `_`: "invoice", U+202E, "gpj.exe" is shown as "invoice_gpj.exe",
never as "invoiceexe.jpg"; its type is guessed from that name. Such a file is
renamed to it in `outputs/` (a hard link made under the new name, `NAME (2).EXT`
... when taken, then the old name removed), so its path holds none either and
a newline cannot break a `file: PATH (name)` line; when that fails it goes out
under its own path with the shown name.

`Listings` spares both listings while a directory watch (`Watch`, the
daemon's `DirWatch`) vouches that `outputs/` is still empty or missing (most
tenants' case: a tool that hands out no file never makes it):
`stamp(outputs)` is the directory's generation (any file written, its
attributes changed, an entry made, removed or renamed moves it), or, while
`outputs/` is missing, the entries generation of its parent (its creation
moves it), taken before the listing it vouches for. `before(outputs)` lists
again only when the stamp moved since the last empty listing, `after` only
when it moved during the turn. A listing that holds a file is never vouched
for: the file may have another name outside `outputs/` (a hard link made at
any time), and a write through that name is no event of `outputs/`. Nor is
a directory the watch cannot watch (a link on the way, outside its roots, no
inotify): each call lists, as without a watch.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import unicodedata
from collections import OrderedDict
from pathlib import Path
from typing import Protocol

from bridge.types.messages import OutFile
from forge.pathnames import UNSHOWABLE_CATEGORIES

MAX_FILES = 10
HIDDEN = UNSHOWABLE_CATEGORIES  # categories shown_name replaces: those the path gate refuses
Seen = frozenset[tuple[str, int, int]]
# (the directory watched, 0: its whole generation / 1: its entries', the generation)
Stamp = tuple[str, int, int]
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


def shown_name(name: str) -> str:
    """`name` as the person is shown it: each control, format or separator character
    and each lone surrogate replaced by `_` (the rest, the extension too, as it is)."""
    if name.isprintable() and name.isascii():
        return name
    return "".join("_" if unicodedata.category(c) in HIDDEN else c for c in name)


def new_files(outputs: Path, now: Seen, before: Seen) -> tuple[OutFile, ...]:
    """The files of `outputs` new or changed in `now` (its listing) since `before`,
    each under its `shown_name` (renamed to it: see the module)."""
    fresh = sorted({name for name, _, _ in now - before})[:MAX_FILES]
    out = []
    for name in fresh:
        shown = shown_name(name)
        if shown != name:
            renamed = _renamed(outputs, name, shown)
            name, shown = (renamed, renamed) if renamed is not None else (name, shown)
        out.append(OutFile(outputs / name, shown, mime_of(shown)))
    return tuple(out)


def _renamed(outputs: Path, name: str, shown: str) -> str | None:
    """Give the entry `name` of `outputs` the name `shown` (or `shown (2)` ... before
    its extension, when taken): a hard link of the entry itself (a link is linked, not
    followed), then `name` removed. The name now; None when no link could be made."""
    suffix = Path(shown).suffix
    stem = shown[: len(shown) - len(suffix)]
    try:
        fd = os.open(outputs, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for candidate in (shown, *(f"{stem} ({k}){suffix}" for k in range(2, 10))):
            try:
                os.link(name, candidate, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            except FileExistsError:
                continue
            except OSError:
                return None
            with contextlib.suppress(OSError):  # else both names stay: the safe one goes out
                os.unlink(name, dir_fd=fd)
            return candidate
        return None
    finally:
        os.close(fd)


class Watch(Protocol):
    """Directory change generations (`bridge.core.dirwatch.DirWatch`)."""

    def generations(self, directory: str) -> tuple[int, int] | None: ...


class Listings:
    """`seen` and `new_files` of tenants' `outputs/`, spared while `watch` vouches that
    it is still empty or missing (as the module says); `remember` directories kept."""

    def __init__(self, watch: Watch | None, remember: int = 4096) -> None:
        self._watch = watch
        self._last: OrderedDict[str, Stamp] = OrderedDict()  # empty or missing then
        self._remember = remember

    def stamp(self, outputs: Path) -> Stamp | None:
        """What vouches for a listing of `outputs` taken after it (None: nothing)."""
        watch = self._watch
        if watch is None:
            return None
        path = str(outputs)
        last = self._last.get(path)
        if last is not None and last[1] == 1:  # missing then: still, if nothing came
            both = watch.generations(last[0])
            if both is not None and both[1] == last[2]:
                return last
        both = watch.generations(path)
        if both is not None:
            return (path, 0, both[0])
        if os.path.lexists(path):  # there, yet not watched (a link, out of watches)
            return None
        parent = os.path.dirname(path)
        both = watch.generations(parent)
        return None if both is None else (parent, 1, both[1])

    def before(self, outputs: Path) -> tuple[Seen, Stamp | None]:
        """`seen(outputs)` and the stamp that vouches for it (None: nothing does)."""
        stamp = self.stamp(outputs)  # before the listing: a change during it moves it
        path = str(outputs)
        if stamp is not None and self._last.get(path) == stamp:
            self._last.move_to_end(path)
            return frozenset(), stamp
        return self._listed(outputs, stamp)

    def after(self, outputs: Path, before: Seen, stamp: Stamp | None) -> tuple[OutFile, ...]:
        """The files new or changed since `before` (`new_files` of a fresh listing);
        none, and no listing, while `stamp` holds. The
        listing it takes is kept for the next `before`."""
        now = self.stamp(outputs)
        if stamp is not None and now == stamp:
            return ()
        return new_files(outputs, self._listed(outputs, now)[0], before)

    def _listed(self, outputs: Path, stamp: Stamp | None) -> tuple[Seen, Stamp | None]:
        """A listing of `outputs` taken after `stamp`; an empty one is vouched for by it."""
        path = str(outputs)
        found = seen(outputs)
        if stamp is None or found:
            self._last.pop(path, None)
            return found, None
        self._last[path] = stamp
        self._last.move_to_end(path)
        if len(self._last) > self._remember:
            self._last.popitem(last=False)
        return found, stamp
