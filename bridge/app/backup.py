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

The copy ends with `MANIFEST.json` (written last: a backup without it is
incomplete): format, roost version, time, the audit head, and for each file
its size, mode and SHA-256. `restore` refuses a home that is not empty and
checks every file against the manifest before it writes anything.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from bridge.audit.chains import chain_files
from bridge.audit.store import complete_end, head_path, lock_path
from bridge.types.file_tree import walk

MANIFEST = "MANIFEST.json"
FORMAT = 1
CHAIN = Path("audit") / "chain.jsonl"
SQLITE_SUFFIXES = (".db", ".sqlite")
# never copied: SQLite's side files (the backup API folds them in), locks, the chain's own
_SIDE_SUFFIXES = ("-wal", "-shm", "-journal", ".lock", ".tmp")
PATH_MAX = 4096  # the longest path, in bytes, the Linux kernel takes


class BackupError(Exception):
    """The backup or restore cannot be done; the message says why and what to do."""


@dataclass(frozen=True)
class BackupResult:
    dest: Path
    files: int
    bytes: int
    audit_seq: int
    left_out: tuple[str, ...] = ()  # files not copied: their paths are longer than PATH_MAX


def roost_version() -> str:
    try:
        return metadata.version("roost")
    except metadata.PackageNotFoundError:
        return "unknown"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


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
    found = sorted(e.parts for e in walk(root, skipped=skipped) if e.is_file())
    if skipped:
        where, exc = skipped[0]
        raise BackupError(f"cannot read {root / where}: {exc.strerror or exc}")
    for parts in found:
        yield Path(*parts)


def too_long(path: Path) -> bool:
    """Whether the kernel refuses `path` for its length (PATH_MAX, 4,096 bytes)."""
    return len(os.fsencode(path)) >= PATH_MAX


def _private_parent(root: Path, rel: Path) -> None:
    path = root
    for part in rel.parent.parts:
        path = path / part
        path.mkdir(mode=0o700, exist_ok=True)


def _copy_sqlite(src: Path, dst: Path) -> None:
    """SQLite's online backup: a consistent snapshot even while another process writes."""
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    source = sqlite3.connect(f"{src.resolve().as_uri()}?mode=ro", uri=True, timeout=10.0)
    target = sqlite3.connect(dst)
    try:
        source.backup(target)
        target.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
    finally:
        target.close()
        source.close()


def _copy_file(src: Path, dst: Path) -> None:
    mode = src.stat().st_mode & 0o777
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out, src.open("rb") as inp:
        shutil.copyfileobj(inp, out)
    os.chmod(dst, mode)


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
    _empty_target(dest, "backup destination")
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(dest, 0o700)
    chains = _chains(home)
    held = {p for c in chains for p in (c, head_path(c))}
    left_out = []
    for rel in walk_files(home):
        if _skipped(rel, held):
            continue
        if too_long(home / rel) or too_long(dest / rel):  # the kernel takes neither path
            left_out.append(str(rel))
            continue
        _private_parent(dest, rel)
        (_copy_sqlite if _is_sqlite(rel) else _copy_file)(home / rel, dest / rel)
    seqs = {rel: _copy_chain(home, dest, rel) for rel in chains}
    seq = sum(seqs.values())  # records in all chains (one chain: its head's seq)
    files = {
        str(rel): {
            "sha256": sha256_file(dest / rel),
            "size": (dest / rel).stat().st_size,
            "mode": f"{(dest / rel).stat().st_mode & 0o777:04o}",
        }
        for rel in walk_files(dest)
    }
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
    total = sum(int(str(f["size"])) for f in files.values())
    return BackupResult(dest, len(files), total, seq, tuple(left_out))


def read_manifest(src: Path) -> dict[str, dict[str, str]]:
    """The files a backup lists, each checked (size, SHA-256); BackupError names the first fault."""
    try:
        manifest = json.loads((src / MANIFEST).read_text())
    except FileNotFoundError:
        raise BackupError(
            f"{src} has no {MANIFEST}: not a roost backup, or an unfinished one"
        ) from None
    except ValueError as exc:
        raise BackupError(f"{src / MANIFEST} is not JSON ({exc})") from None
    if manifest.get("format") != FORMAT or not isinstance(manifest.get("files"), dict):
        raise BackupError(f"{src / MANIFEST}: unknown backup format {manifest.get('format')!r}")
    files: dict[str, dict[str, str]] = manifest["files"]
    present = {str(rel) for rel in walk_files(src)} - {MANIFEST}
    if present != set(files):
        odd = sorted(present ^ set(files))[:3]
        raise BackupError(f"the backup's files differ from its manifest: {', '.join(odd)}")
    for rel, entry in files.items():
        path = Path(rel)
        if path.is_absolute() or ".." in path.parts:
            raise BackupError(f"the manifest names a path outside the backup: {rel!r}")
        if sha256_file(src / rel) != entry.get("sha256"):
            raise BackupError(f"{rel} does not match its SHA-256 in the manifest (damaged copy)")
    return files


def restore(src: Path, home: Path) -> int:
    """Copy a verified backup into an empty (or new) home; return the number of files."""
    try:
        _empty_target(home, "home")
    except BackupError:
        raise BackupError(
            f"refusing to restore into {home}: it is not empty. Restore into a new "
            "directory (set ROOST_HOME to it), or move the old home aside first."
        ) from None
    files = read_manifest(src)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    for rel, entry in sorted(files.items()):
        _private_parent(home, Path(rel))
        _copy_file(src / rel, home / rel)
        os.chmod(home / rel, int(entry.get("mode", "0600"), 8) & 0o777)
    (home / "tenants").mkdir(mode=0o700, exist_ok=True)
    return len(files)
