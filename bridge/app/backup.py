"""`roost backup` and `roost restore`: a consistent copy of a home while the daemon runs.

What is copied, and how:
- every SQLite database (`roost.db`, each tenant's forge `usage.sqlite`) through
  SQLite's online backup API, so a writer in the daemon never tears the copy;
- each audit chain (the single one, or each instance's `chain-NAME.jsonl`)
  under its own cross-process lock (its writer appends a batch and rewrites
  the head under the same lock), so chain and head agree; only the complete
  records are copied;
- every other regular file (tenants/, STEERING.md, personas/, web-token,
  audit/names.key ...) byte for byte, with its mode; directories are 0700.

A file that vanishes between the listing and its copy (the daemon deletes
unclaimed uploads, old exports, expired attachments as it runs), or that is no
longer a regular file by then, is left out of the copy and counted
(`BackupResult.vanished`): nothing that still existed at the end is lost.

The copy ends with `MANIFEST.json` (written last: a backup without it is
incomplete): format, roost version, time, the audit head, and for each file
its size, mode and SHA-256. `restore` refuses a home that is not empty, checks
the whole manifest (each entry a SHA-256, a size and a mode `0NNN`) and every
file against it before it writes anything, then opens each file once more
(never through a link), hashes what it copies and compares again: a file
changed or swapped meanwhile ends the restore, and what it had written is
removed. Restored files never get group or other bits (the home's rule: dirs
0700, files 0600, see `roost doctor`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from bridge.audit.chains import chain_files
from bridge.audit.store import complete_end, head_path, lock_path
from bridge.core.words import count
from bridge.types.file_tree import TRIES, TreeChanged, until_still, walk

MANIFEST = "MANIFEST.json"
FORMAT = 1
CHAIN = Path("audit") / "chain.jsonl"
SQLITE_SUFFIXES = (".db", ".sqlite")
# never copied: SQLite's side files (the backup API folds them in), locks, the chain's own
_SIDE_SUFFIXES = ("-wal", "-shm", "-journal", ".lock", ".tmp")
PATH_MAX = 4096  # the longest path, in bytes, the Linux kernel takes
# a source is opened once: never through a link, never blocking (a FIFO put in its place)
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MODE = re.compile(r"0[0-7]{3}")
_GONE = (errno.ENOENT, errno.ENOTDIR)  # removed (or a folder on its path was)


class BackupError(Exception):
    """The backup or restore cannot be done; the message says why and what to do."""


class NotRegular(OSError):
    """The path is no longer a regular file (a link, a folder, a FIFO ...): not read."""


@dataclass(frozen=True)
class Entry:
    """One file of a backup's manifest, checked: its SHA-256, size and mode."""

    sha256: str
    size: int
    mode: int


@dataclass(frozen=True)
class BackupResult:
    dest: Path
    files: int
    bytes: int
    audit_seq: int
    left_out: tuple[str, ...] = ()  # files not copied: their paths are longer than PATH_MAX
    vanished: int = 0  # files listed, then gone (or no longer regular files) before their copy


def roost_version() -> str:
    try:
        return metadata.version("roost")
    except metadata.PackageNotFoundError:
        return "unknown"


def open_regular(path: Path) -> int:
    """A read-only descriptor of the regular file `path`, its last part never followed as a
    link; `NotRegular` for anything else, FileNotFoundError (ENOENT, ENOTDIR) if gone."""
    try:
        fd = os.open(path, _READ)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegular(errno.ELOOP, "a symbolic link, not a file", str(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegular(errno.EINVAL, "not a regular file", str(path))
    return fd


def _read_blocks(fd: int) -> Iterator[bytes]:
    while block := os.read(fd, 1 << 16):
        yield block


def sha256_file(path: Path) -> tuple[str, int]:
    """The SHA-256 and size of the regular file `path` (read once, no link followed)."""
    digest, size = hashlib.sha256(), 0
    fd = open_regular(path)
    try:
        for block in _read_blocks(fd):
            digest.update(block)
            size += len(block)
    finally:
        os.close(fd)
    return digest.hexdigest(), size


def _is_sqlite(rel: Path) -> bool:
    return rel.suffix in SQLITE_SUFFIXES


def _skipped(rel: Path, chains: set[Path]) -> bool:
    name = rel.name
    if rel in chains:
        return True  # copied under its chain's lock
    return name.endswith(_SIDE_SUFFIXES) or name == MANIFEST


def walk_files(root: Path) -> Iterator[Path]:
    """Every regular file under `root` (relative, sorted), symlinks and sockets left out.
    Any depth (`file_tree.walk`: no recursion); a folder that cannot be read is an
    error, never a silent gap in the copy."""
    skipped: list[tuple[str, OSError]] = []

    def listing() -> list[tuple[str, ...]]:
        skipped.clear()
        return sorted(e.parts for e in walk(root, skipped=skipped) if e.is_file())

    try:
        found = until_still(listing)
    except TreeChanged as moved:
        raise BackupError(
            f"folders under {root} kept moving while they were listed ({TRIES} times); run it again"
        ) from moved
    if skipped:
        where, exc = skipped[0]
        raise BackupError(f"cannot read {root / where}: {exc.strerror or exc}")
    for parts in found:
        yield Path(*parts)


def too_long(path: Path) -> bool:
    """Whether the kernel refuses `path` for its length (PATH_MAX, 4,096 bytes)."""
    return len(os.fsencode(path)) >= PATH_MAX


def _private_parent(root: Path, rel: Path, made: list[Path] | None = None) -> None:
    """Make the folders of `rel` under `root` (0700); add those it made to `made`."""
    path = root
    for part in rel.parent.parts:
        path = path / part
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        if made is not None:
            made.append(path)


def _copy_sqlite(src: Path, dst: Path) -> None:
    """SQLite's online backup: a consistent snapshot even while another process writes.
    FileNotFoundError / `NotRegular`: `src` is gone, or no longer a regular file."""
    os.close(open_regular(src))  # a link put in its place is not followed to elsewhere
    try:
        source = sqlite3.connect(f"{src.resolve().as_uri()}?mode=ro", uri=True, timeout=10.0)
    except sqlite3.OperationalError:
        if not os.path.lexists(src):  # removed after the check above
            raise FileNotFoundError(errno.ENOENT, "vanished", str(src)) from None
        raise
    fd = os.open(dst, _WRITE, 0o600)
    os.close(fd)
    target = sqlite3.connect(dst)
    try:
        source.backup(target)
        target.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
    finally:
        target.close()
        source.close()


def _copy_file(src: Path, dst: Path, mode: int | None = None) -> tuple[str, int]:
    """Copy the regular file `src` (opened once, no link followed) to the new file `dst`;
    its mode is `mode`, or else the source's. Return the SHA-256 and size of the bytes
    copied. FileNotFoundError / `NotRegular`: `src` is gone or no longer a regular file
    (`dst` is then not made); any error after `dst` was made removes it."""
    inp = open_regular(src)
    try:
        if mode is None:
            mode = os.fstat(inp).st_mode & 0o777
        out = os.open(dst, _WRITE, 0o600)
        try:
            digest, size = hashlib.sha256(), 0
            for block in _read_blocks(inp):
                digest.update(block)
                size += len(block)
                view = memoryview(block)
                while view:
                    view = view[os.write(out, view) :]
            os.fchmod(out, mode)
        except BaseException:
            os.close(out)
            dst.unlink(missing_ok=True)
            raise
        os.close(out)
    finally:
        os.close(inp)
    return digest.hexdigest(), size


def _chains(home: Path) -> list[Path]:
    """Every audit chain of the home (relative): the single one and each instance's."""
    return [p.relative_to(home) for p in chain_files(home / CHAIN.parent)]


def _copy_chain(home: Path, dest: Path, rel: Path) -> int:
    """Copy a chain and its head under the chain writer's lock (the writer appends a batch
    and rewrites the head under it: the two agree); return the head's seq (0: none)."""
    chain = home / rel
    _private_parent(dest, rel)
    lock_fd = os.open(lock_path(chain), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        with chain.open("rb") as inp:
            end = complete_end(inp.fileno(), os.fstat(inp.fileno()).st_size)
            fd = os.open(dest / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                remaining = end
                while remaining:
                    block = inp.read(min(remaining, 1 << 16))
                    out.write(block)
                    remaining -= len(block)
        head = head_path(chain)
        if not head.exists():
            return 0
        _copy_file(head, dest / head_path(rel))
        return int(json.loads(head.read_bytes())["seq"])
    finally:
        os.close(lock_fd)  # closing releases the flock


def _empty_target(path: Path, what: str) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise BackupError(f"{what} {path} is not empty; give a new or empty directory")


def backup(home: Path, dest: Path, clock: Callable[[], float] = time.time) -> BackupResult:
    """Copy `home` into the new or empty directory `dest` and write its manifest."""
    if not (home / "roost.db").exists() and not (home / "tenants").is_dir():
        raise BackupError(f"{home} is not a roost home (no roost.db, no tenants/)")
    if dest.resolve().is_relative_to(home.resolve()):  # it would copy itself, and earlier ones
        raise BackupError(
            f"backup destination {dest} is inside the home {home}; give a directory outside it"
        )
    if os.statvfs(home).f_flag & os.ST_RDONLY:  # not a damaged database: say what it is
        raise BackupError(
            f"the home {home} is on a read-only file system: a backup takes SQLite's and the "
            "audit chain's locks in it, which needs it writable; run it where the home is "
            "mounted read-write (the daemon may run)"
        )
    _empty_target(dest, "backup destination")
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(dest, 0o700)
    chains = _chains(home)
    held = {p for c in chains for p in (c, head_path(c))}
    left_out = []
    vanished = 0
    copied: dict[Path, tuple[str, int]] = {}  # SHA-256 and size of what _copy_file wrote
    for rel in walk_files(home):
        if _skipped(rel, held):
            continue
        if too_long(home / rel) or too_long(dest / rel):  # the kernel takes neither path
            left_out.append(str(rel))
            continue
        _private_parent(dest, rel)
        try:
            if _is_sqlite(rel):
                _copy_sqlite(home / rel, dest / rel)
            else:
                copied[rel] = _copy_file(home / rel, dest / rel)
        except NotRegular:
            vanished += 1  # replaced by a link (or else) since the listing: not copied
        except OSError as exc:
            if exc.errno not in _GONE:
                raise
            vanished += 1  # deleted by its owner (the daemon's cleanup) since the listing
    seqs = {rel: _copy_chain(home, dest, rel) for rel in chains}
    seq = sum(seqs.values())  # records in all chains (one chain: its head's seq)
    files: dict[str, dict[str, str | int]] = {}
    total = 0
    for rel in walk_files(dest):  # hashed as copied, or else (SQLite, chains) read here
        sha256, size = copied.get(rel) or sha256_file(dest / rel)
        total += size
        mode = (dest / rel).stat().st_mode & 0o777
        files[str(rel)] = {"sha256": sha256, "size": size, "mode": f"{mode:04o}"}
    manifest = {
        "format": FORMAT,
        "roost_version": roost_version(),
        "created": datetime.fromtimestamp(clock(), UTC).isoformat(timespec="seconds"),
        "audit_seq": seq,
        "files": files,
    }
    fd = os.open(dest / MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(manifest, out, indent=1, sort_keys=True)
        out.flush()
        os.fsync(out.fileno())
    return BackupResult(dest, len(files), total, seq, tuple(left_out), vanished)


def _entry(rel: str, raw: object) -> Entry:
    """One manifest entry, checked; BackupError names what is wrong with it."""
    path = Path(rel)
    if not rel or path.is_absolute() or ".." in path.parts:
        raise BackupError(f"the manifest names a path outside the backup: {rel!r}")
    if not isinstance(raw, dict):
        raise BackupError(f"the manifest's entry for {rel!r} is not an object: {raw!r:.60}")
    sha256, size, mode = raw.get("sha256"), raw.get("size"), raw.get("mode")
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        raise BackupError(f"the manifest's SHA-256 of {rel!r} is not 64 hex digits: {sha256!r:.80}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise BackupError(f"the manifest's size of {rel!r} is not a whole number: {size!r:.40}")
    if not isinstance(mode, str) or not _MODE.fullmatch(mode):
        raise BackupError(f"the manifest's mode of {rel!r} is not like 0600: {mode!r:.40}")
    return Entry(sha256, size, int(mode, 8) & 0o700)  # never group or other bits


def _load_manifest(src: Path) -> object:
    try:
        fd = open_regular(src / MANIFEST)
    except FileNotFoundError:
        raise BackupError(
            f"{src} has no {MANIFEST}: not a roost backup, or an unfinished one"
        ) from None
    except OSError as exc:
        raise BackupError(f"cannot read {src / MANIFEST}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "rb") as fh:
            return json.loads(fh.read())
    except (ValueError, RecursionError) as exc:
        raise BackupError(f"{src / MANIFEST} is not JSON ({exc})") from None


def read_manifest(src: Path) -> dict[str, Entry]:
    """The files a backup lists: the whole manifest checked (each entry an object with a
    SHA-256, a size and a mode `0NNN`), then each file (size, SHA-256); BackupError names
    the first fault."""
    manifest = _load_manifest(src)
    if not isinstance(manifest, dict):
        raise BackupError(f"{src / MANIFEST}: not a roost backup manifest (no object)")
    raw = manifest.get("files")
    if manifest.get("format") != FORMAT or not isinstance(raw, dict):
        raise BackupError(f"{src / MANIFEST}: unknown backup format {manifest.get('format')!r}")
    files = {rel: _entry(rel, entry) for rel, entry in raw.items()}
    present = {str(rel) for rel in walk_files(src)} - {MANIFEST}
    if present != set(files):
        odd = sorted(present ^ set(files))[:3]
        raise BackupError(f"the backup's files differ from its manifest: {', '.join(odd)}")
    for rel, entry in files.items():
        try:
            found = sha256_file(src / rel)
        except OSError as exc:
            raise BackupError(f"cannot read {rel} in the backup: {exc.strerror or exc}") from None
        if found != (entry.sha256, entry.size):
            raise BackupError(f"{rel} does not match its SHA-256 in the manifest (damaged copy)")
    return files


def _undo(home: Path, made: list[Path], home_made: bool) -> list[str]:
    """Remove what a failed restore wrote (`made`: files and folders, in the order made);
    return what could not be removed."""
    left = []
    for path in reversed(made):
        try:
            if path.is_dir() and not path.is_symlink():
                path.rmdir()  # only if empty: nothing of anyone else's goes
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            left.append(str(path.relative_to(home)))
    if home_made:
        with contextlib.suppress(OSError):  # only if empty
            home.rmdir()
    return left


def restore(src: Path, home: Path) -> int:
    """Copy a verified backup into an empty (or new) home; return the number of files.
    Each file is copied from one open (no link followed) and its copy's SHA-256 compared
    again; on any fault what was written is removed and BackupError says why."""
    try:
        _empty_target(home, "home")
    except BackupError:
        raise BackupError(
            f"refusing to restore into {home}: it is not empty. Restore into a new "
            "directory (set ROOST_HOME to it), or move the old home aside first."
        ) from None
    files = read_manifest(src)
    home_made = not home.exists()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    made: list[Path] = []
    done = 0
    try:
        for rel, entry in sorted(files.items()):
            try:
                _private_parent(home, Path(rel), made)
                copied = _copy_file(src / rel, home / rel, entry.mode)
            except NotRegular:
                raise BackupError(
                    f"{rel} in the backup is no longer a regular file (replaced during the restore)"
                ) from None
            except OSError as exc:
                raise BackupError(f"cannot restore {rel}: {exc.strerror or exc}") from None
            made.append(home / rel)
            if copied != (entry.sha256, entry.size):
                raise BackupError(
                    f"{rel} changed in the backup during the restore: the copy no longer "
                    "matches its SHA-256 in the manifest"
                )
            done += 1
    except BackupError as exc:
        left = _undo(home, made, home_made)
        if not left:
            undone = f"the {count(done, 'file')} copied before it removed again, " if done else ""
            raise BackupError(
                f"{exc}. Nothing was restored ({undone}{home} left as it was): check the "
                "backup and restore again."
            ) from None
        shown = ", ".join(left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
        raise BackupError(
            f"{exc}. Restored {count(done, 'file')} before it; could not remove again: "
            f"{shown}. Move {home} aside before you restore again."
        ) from None
    (home / "tenants").mkdir(mode=0o700, exist_ok=True)
    return len(files)
