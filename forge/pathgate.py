"""The path gate: the only way a tool opens a file.

Every path is resolved under the workspace directory and opened component by
component relative to a directory descriptor with O_NOFOLLOW, so no symlink is
ever followed and a concurrent rename cannot swap a component. Refused with a
clear message: `..`, absolute paths outside the workspace, symlinks (including
ones created after the check), hard links (a regular file with st_nlink > 1 may
be a link to a file outside), devices, FIFOs, sockets, directories, files on
another mount, NUL bytes and over-long names (forge.pathnames checks the
text). Write modes truncate only after the checks pass, and files opened for
writing are charged to the call's write budget (forge.write_budget). The
directory operations the `os`/`pathlib` shims need (stat, scandir, mkdir,
remove, rmdir, rename) walk the same way and act on the last component
relative to its parent's descriptor, never on a resolved string. What makes or
moves an entry (rename, mkdir, a file's creation) checks again afterwards that
its folder is still where the tool's path says, and undoes itself if not: another
call of the tenant may have moved that folder deeper meanwhile (see `rename`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import IO, Any

from forge.pathnames import MAX_PATH_BYTES, PathDenied, components, encoded_len, parse_mode
from forge.write_budget import WriteBudget, WriteQuotaExceeded, wrap

__all__ = ["MAX_ENTRIES", "PathDenied", "PathGate"]

_BASE_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_ENTRIES = 10_000  # names one scandir returns
_MOVED = (
    "{!r}: another call moved a folder on the way meanwhile (a path could have been "
    "longer than {} bytes); nothing was made, try again"
)


class PathGate:
    """Opens files under one workspace directory; refuses everything else."""

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        dir_fd: int | None = None,
        resolved: bool = False,
        budget: WriteBudget | None = None,
    ) -> None:
        """`budget`: the call's write budget (forge.write_budget); None: not counted."""
        self.budget = budget
        root = os.fspath(workspace)
        self.root = root if resolved else os.path.realpath(root)
        self._dir_fd = dir_fd if dir_fd is not None else os.open(self.root, _DIR_FLAGS)
        self._dev = os.fstat(self._dir_fd).st_dev

    def close(self) -> None:
        os.close(self._dir_fd)

    def _walk(self, parts: list[str], display: str) -> int:
        """Open the parent directory of the last component; returns a new fd."""
        fd = os.dup(self._dir_fd)
        try:
            for part in parts[:-1]:
                try:
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise self._explain(exc, part, display, directory=True) from None
                os.close(fd)
                fd = nfd
                if os.fstat(fd).st_dev != self._dev:
                    raise PathDenied(f"{display!r} crosses into another file system")
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def _explain(exc: OSError, part: str, display: str, directory: bool = False) -> OSError:
        if exc.errno == errno.ELOOP:
            return PathDenied(f"{display!r}: {part!r} is a symbolic link; links are not followed")
        if exc.errno == errno.ENOTDIR and directory:
            return PathDenied(f"{display!r}: {part!r} is not a directory (or is a symlink)")
        if exc.errno == errno.ENOENT:
            return FileNotFoundError(errno.ENOENT, f"no such file in the workspace: {display!r}")
        if exc.errno == errno.EEXIST:
            return FileExistsError(errno.EEXIST, f"file exists: {display!r}")
        if exc.errno == errno.EISDIR:
            return IsADirectoryError(errno.EISDIR, f"{display!r} is a directory")
        if exc.errno in (errno.EACCES, errno.EPERM):
            return PathDenied(f"{display!r}: permission denied")
        return OSError(exc.errno, f"{display!r}: {os.strerror(exc.errno or 0)}")

    def open_fd(self, path: str, flags: int, truncate: bool = False) -> int:
        """Checked descriptor for `path` (relative to the workspace)."""
        return self._open(path, flags, truncate)[0]

    def _open(self, path: str, flags: int, truncate: bool) -> tuple[int, os.stat_result, bool, str]:
        """(descriptor, its status before truncation, created by this open, display)."""
        parts = components(path, self.root)
        display = "/".join(parts)
        parent = self._walk(parts, display)
        try:
            try:
                fd, created = self._create_or_open(parts[-1], flags, parent)
            except WriteQuotaExceeded:
                raise
            except OSError as exc:
                raise self._explain(exc, parts[-1], display) from None
            if created and not self._anchored(parent, parts[:-1]):  # moved: see rename
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(parts[-1], dir_fd=parent)
                raise PathDenied(_MOVED.format(display, MAX_PATH_BYTES))
        finally:
            os.close(parent)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise PathDenied(
                    f"{display!r} is not a regular file (device, FIFO, socket or directory)"
                )
            if st.st_nlink != 1:
                raise PathDenied(
                    f"{display!r} has {st.st_nlink} hard links; hard-linked files "
                    "are refused because they may point outside the workspace"
                )
            if st.st_dev != self._dev:
                raise PathDenied(f"{display!r} is on another file system")
            os.set_blocking(fd, True)  # F_GETFL, then F_SETFL without O_NONBLOCK
            if truncate:
                os.ftruncate(fd, 0)
        except BaseException:
            os.close(fd)
            raise
        return fd, st, created, display

    def _create_or_open(self, name: str, flags: int, parent: int) -> tuple[int, bool]:
        """Open `name`; with a write budget, also learn whether this open created it."""
        if self.budget is None or not flags & os.O_CREAT:
            return os.open(name, flags | _BASE_FLAGS, 0o644, dir_fd=parent), False
        try:
            fd = os.open(name, flags | os.O_EXCL | _BASE_FLAGS, 0o644, dir_fd=parent)
        except FileExistsError:
            if flags & os.O_EXCL:  # mode "x": it must be new
                raise
            return os.open(name, (flags & ~os.O_CREAT) | _BASE_FLAGS, dir_fd=parent), False
        try:
            self.budget.created(name)
        except BaseException:
            os.close(fd)
            os.unlink(name, dir_fd=parent)  # made by this open: not kept over the budget
            raise
        return fd, True

    def open(
        self,
        path: str,
        mode: str = "r",
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
    ) -> IO[Any]:
        """Like the built-in open(), for workspace-relative paths only; a file
        opened for writing is charged to the call's write budget, if any."""
        flags, truncate, mode = parse_mode(mode)
        writes = flags & (os.O_WRONLY | os.O_RDWR)
        fd, st, created, display = self._open(path, flags, truncate)
        if self.budget is not None and writes:
            rec = self.budget.opened(display, st, created or truncate, bool(flags & os.O_APPEND))
            return wrap(fd, mode, self.budget, rec, encoding, errors, newline)  # owns fd
        try:
            # the built-in open (io.open), not os.fdopen, a Python wrapper that imports
            # io and calls it: each Python frame on a call's path is pages a child copies
            if "b" in mode:
                return open(fd, mode)
            return open(fd, mode, encoding=encoding or "utf-8", errors=errors, newline=newline)
        except BaseException:
            os.close(fd)
            raise

    def _dir_fd_of(self, path: object) -> int:
        """A descriptor of a workspace directory (the workspace itself allowed)."""
        parts = components(path, self.root, allow_root=True)
        return self._walk([*parts, "."], "/".join(parts) or ".")

    def _split(self, path: object) -> tuple[int, str, str]:
        """(parent descriptor, last name, display) for a path below the workspace."""
        parts = components(path, self.root)
        display = "/".join(parts)
        return self._walk(parts, display), parts[-1], display

    def listdir(self, path: object = ".") -> list[str]:
        """Sorted names in a workspace directory (no symlinks followed)."""
        fd = self._dir_fd_of(path)
        try:
            names = os.listdir(fd)
        finally:
            os.close(fd)
        if len(names) > MAX_ENTRIES:
            raise PathDenied(f"{path!r} holds more than {MAX_ENTRIES} entries")
        return sorted(names)

    def scandir(self, path: object = ".") -> list[tuple[str, os.stat_result]]:
        """(name, lstat) of every entry of a workspace directory, sorted by name."""
        fd = self._dir_fd_of(path)
        try:
            names = os.listdir(fd)
            if len(names) > MAX_ENTRIES:
                raise PathDenied(f"{path!r} holds more than {MAX_ENTRIES} entries")
            out = []
            for name in sorted(names):
                try:
                    out.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False)))
                except FileNotFoundError:
                    continue  # removed meanwhile
            return out
        finally:
            os.close(fd)

    def stat(self, path: object) -> os.stat_result:
        """The status of a workspace file or directory; a symlink is refused."""
        parts = components(path, self.root, allow_root=True)
        if not parts:
            return os.fstat(self._dir_fd)
        parent, name, display = self._split(path)
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError as exc:
            raise self._explain(exc, name, display) from None
        finally:
            os.close(parent)
        if stat.S_ISLNK(st.st_mode):
            raise PathDenied(f"{display!r} is a symbolic link; links are not followed")
        if stat.S_ISREG(st.st_mode) and st.st_nlink != 1:
            raise PathDenied(f"{display!r} has {st.st_nlink} hard links; refused like open()")
        return st

    def identity(self, path: str) -> tuple[int, int]:
        """(device, inode) of a workspace file."""
        st = self.stat(path)
        return st.st_dev, st.st_ino

    def cut(self, path: str, key: tuple[int, int], size: int) -> None:
        """Truncate `path` to `size` bytes if it is still the file `key` names."""
        fd = self.open_fd(path, os.O_WRONLY)
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) == key:
                os.ftruncate(fd, size)
        finally:
            os.close(fd)

    def mkdir(self, path: object, parents: bool = False, exist_ok: bool = False) -> None:
        """Create a directory (and its missing parents when asked)."""
        parts = components(path, self.root)
        display = "/".join(parts)
        todo = [parts[: i + 1] for i in range(len(parts))] if parents else [parts]
        for i, prefix in enumerate(todo):
            parent = self._walk(prefix, display)
            try:
                os.mkdir(prefix[-1], 0o755, dir_fd=parent)
            except FileExistsError:
                last = i == len(todo) - 1
                st = os.stat(prefix[-1], dir_fd=parent, follow_symlinks=False)
                if last and not (exist_ok and stat.S_ISDIR(st.st_mode)):
                    raise FileExistsError(errno.EEXIST, f"file exists: {display!r}") from None
            except OSError as exc:
                raise self._explain(exc, prefix[-1], display, directory=True) from None
            else:
                if not self._anchored(parent, prefix[:-1]):  # moved meanwhile: see rename
                    with contextlib.suppress(OSError):
                        os.rmdir(prefix[-1], dir_fd=parent)
                    raise PathDenied(_MOVED.format(display, MAX_PATH_BYTES))
                if self.budget is not None:
                    self._charge_dir(prefix[-1], parent)
            finally:
                os.close(parent)

    def _charge_dir(self, name: str, parent: int) -> None:
        """Charge a folder `mkdir` just made; over the budget it is removed again."""
        assert self.budget is not None
        try:
            self.budget.created(name)
        except BaseException:
            os.rmdir(name, dir_fd=parent)
            raise

    def remove(self, path: object) -> None:
        """Delete a file (a symlink itself, never its target); not a directory."""
        parent, name, display = self._split(path)
        try:
            os.unlink(name, dir_fd=parent)
        except OSError as exc:
            raise self._explain(exc, name, display) from None
        finally:
            os.close(parent)

    def rmdir(self, path: object) -> None:
        """Delete an empty directory."""
        parent, name, display = self._split(path)
        try:
            os.rmdir(name, dir_fd=parent)
        except OSError as exc:
            raise self._explain(exc, name, display, directory=True) from None
        finally:
            os.close(parent)

    def _fits(self, parent: int, name: str, at: int, display: str) -> None:
        """Refuse (PathDenied) when the folder `name` (below `parent`) holds a path that,
        moved to a place `at` bytes long, would be longer than MAX_PATH_BYTES.
        Walks the folder without recursion and with one descriptor open (down by name
        with O_NOFOLLOW, back up by ".."), and stops at the first path too long."""
        room = MAX_PATH_BYTES - at
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        pending: list[tuple[list[str], int]] = []  # per level: folders left, path length
        try:
            length = 0
            while True:
                with os.scandir(fd) as entries:
                    kids = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
                folders = []
                for kid, is_dir in kids:
                    if length + 1 + encoded_len(kid) > room:
                        raise PathDenied(
                            f"{display!r}: a path in the folder would be longer than "
                            f"{MAX_PATH_BYTES} bytes there"
                        )
                    if is_dir:
                        folders.append(kid)
                pending.append((folders, length))
                while pending and not pending[-1][0]:  # this level is done: back up
                    pending.pop()
                    if pending:
                        fd = _replace_fd(fd, os.open("..", _DIR_FLAGS, dir_fd=fd))
                if not pending:
                    return
                folders, above = pending[-1]
                kid = folders.pop()
                fd = _replace_fd(fd, os.open(kid, _DIR_FLAGS, dir_fd=fd))
                length = above + 1 + encoded_len(kid)
        finally:
            os.close(fd)

    def rename(self, src: object, dst: object) -> None:
        """Rename within the workspace, replacing a file at `dst` (os.replace). A folder
        is moved only if every path in it stays within MAX_PATH_BYTES at `dst`: no
        chain of renames builds a tree deeper or longer than a path the gate takes
        (such a tree broke every walk of the tenant's files, `roost forget`'s too).

        Checked again after the move (`_moved_in_place`), and undone when it no
        longer holds: another call of the tenant may, meanwhile, have moved a folder
        into the moved one, or moved the destination's folder deeper (its
        descriptor, taken before, still led there), atk3 F4. Of two such
        renames the later one's second check sees the other's result, so the tree
        is never left deeper than the limit by them."""
        sparent, sname, sdisplay = self._split(src)
        try:
            dparent, dname, ddisplay = self._split(dst)
            moved = f"{sdisplay} -> {ddisplay}"
            try:
                try:
                    st = os.stat(sname, dir_fd=sparent, follow_symlinks=False)
                    folder = stat.S_ISDIR(st.st_mode)
                    if folder:
                        self._fits(sparent, sname, encoded_len(ddisplay), moved)
                    os.rename(sname, dname, src_dir_fd=sparent, dst_dir_fd=dparent)
                except PathDenied:
                    raise
                except OSError as exc:
                    raise self._explain(exc, sname, moved) from None
                if not self._moved_in_place(dparent, ddisplay, dname, folder, moved):
                    self._undo(dparent, dname, sparent, sname, moved)
            finally:
                os.close(dparent)
        finally:
            os.close(sparent)

    def _moved_in_place(
        self, parent: int, display: str, name: str, folder: bool, moved: str
    ) -> bool:
        """After a rename: `parent` is still where `display` says (so a path
        in it is as long as the tool's text), and a folder `name` in it still fits."""
        if not self._anchored(parent, display.split("/")[:-1]):
            return False
        if folder:
            try:
                self._fits(parent, name, encoded_len(display), moved)
            except PathDenied:
                return False
            except OSError:  # moved on again by another call: its own check sees it
                return True
        return True

    def _anchored(self, parent: int, parts: list[str]) -> bool:
        """Whether walking `parts` from the workspace now leads to `parent` itself."""
        fd = os.dup(self._dir_fd)
        try:
            for part in parts:
                fd = _replace_fd(fd, os.open(part, _DIR_FLAGS, dir_fd=fd))
            here, there = os.fstat(fd), os.fstat(parent)
        except OSError:
            return False
        finally:
            os.close(fd)
        return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)

    def _undo(self, parent: int, name: str, back: int, back_name: str, moved: str) -> None:
        """Move `name` back to where it came from; PathDenied says what happened."""
        try:
            os.rename(name, back_name, src_dir_fd=parent, dst_dir_fd=back)
        except OSError:
            raise PathDenied(
                f"{moved!r}: another call changed these folders during the move, and it "
                "could not be undone; it stays at the destination"
            ) from None
        raise PathDenied(
            f"{moved!r}: another call changed these folders during the move (a path would "
            f"have been longer than {MAX_PATH_BYTES} bytes); it was undone, try again"
        )


def _replace_fd(old: int, new: int) -> int:
    """Close `old`, return `new` (one directory descriptor open while a folder is walked)."""
    os.close(old)
    return new
