"""File-level operations on the chain: lock, tail inspection, head file.

Blocking functions only; `AuditChain` calls them from its writer thread.
The chain file is append-only; its last complete line holds the state a
writer continues from, and the head file (`<chain>.head`) holds the last
acknowledged `{seq, hash}` so that a cut tail is noticed. A keyed chain (MACs
on its records and head) is continued only with a key, an unkeyed one only
without (`ChainKeyMismatch`, a `ConfigError`: the CLI's one line, exit 78).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bridge.audit import held
from bridge.audit.record import GENESIS, HEX64_RE, Signer, head_mac
from bridge.core.config import ConfigError

BLOCK = 64 * 1024


class ChainCorrupt(Exception):
    """The chain cannot be continued safely; run `roost audit verify`."""


class ChainKeyMismatch(ChainCorrupt, ConfigError):
    """The chain is keyed and this process has no HMAC key, or the other way round: a
    configuration fault, not damage (a `ConfigError` too: the CLI prints its one line
    and exits 78); nothing was added to the chain."""


def keyed_chain(chain: Path) -> str:
    return (
        f"the audit chain {chain} is keyed (its records carry an HMAC) and this process "
        "has no key: set ROOST_AUDIT_HMAC_KEY_FILE to the service's key file (or run this "
        "as the service does, with its audit-hmac-key credential); nothing was added to it"
    )


def unkeyed_chain(chain: Path) -> str:
    return (
        f"the audit chain {chain} was written without an HMAC key and one is configured: "
        "its records would fail `roost audit verify` with the key (bad_mac); move the "
        "chain and its .head file aside (keep them) to start a keyed chain, or unset the "
        "key; nothing was added to it"
    )


def head_path(chain: Path) -> Path:
    return chain.with_name(chain.stem + ".head")


def lock_path(chain: Path) -> Path:
    return chain.with_name(chain.stem + ".lock")


@contextlib.contextmanager
def exclusive(lock_fd: int) -> Iterator[None]:
    """Hold the cross-process chain lock (flock on the lock file; `held`: the GIL kept
    unless another process holds it)."""
    held.lock(lock_fd)
    try:
        yield
    finally:
        held.unlock(lock_fd)


def complete_end(fd: int, size: int) -> int:
    """Offset just after the last newline (0 when there is none)."""
    pos = size
    while pos > 0:
        start = max(0, pos - BLOCK)
        chunk = os.pread(fd, pos - start, start)
        idx = chunk.rfind(b"\n")
        if idx >= 0:
            return start + idx + 1
        pos = start
    return 0


def line_before(fd: int, end: int) -> bytes:
    """The complete line that ends at `end` (which follows its newline)."""
    stop = end - 1
    pos = stop
    parts: list[bytes] = []
    while pos > 0:
        start = max(0, pos - BLOCK)
        chunk = os.pread(fd, pos - start, start)
        idx = chunk.rfind(b"\n")
        if idx >= 0:
            parts.append(chunk[idx + 1 :])
            break
        parts.append(chunk)
        pos = start
    return b"".join(reversed(parts))


@dataclass(frozen=True)
class Tail:
    """Where a writer continues: last complete record and the torn bytes after it."""

    seq: int
    hash: str
    end: int
    torn: int


def _parse_last(line: bytes) -> tuple[int, str, bool]:
    """The last record's seq, hash and whether it carries a MAC."""
    try:
        rec = json.loads(line)
        seq, digest = rec["seq"], rec["hash"]
    except (ValueError, TypeError, KeyError) as exc:
        raise ChainCorrupt("the last complete line of the chain is not a record") from exc
    if type(seq) is not int or not isinstance(digest, str) or not HEX64_RE.match(digest):
        raise ChainCorrupt("the last complete line of the chain is not a record")
    return seq, digest, "mac" in rec


def read_head(path: Path) -> dict[str, object] | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        head = json.loads(raw)
    except ValueError as exc:
        raise ChainCorrupt(f"head file {path} is not JSON") from exc
    if not isinstance(head, dict) or type(head.get("seq")) is not int:
        raise ChainCorrupt(f"head file {path} is malformed")
    return head


def inspect_tail(fd: int, head_file: Path, key: bytes | None) -> Tail:
    """Read the last complete record and check it against the head file.

    A chain whose last record or head carries a MAC is keyed: a process without a key
    may not continue it (its records and head would carry none, and `verify` with the
    key would fail them), nor may one with a key continue an unkeyed chain
    (`ChainKeyMismatch`, before anything is written)."""
    size = os.fstat(fd).st_size
    end = complete_end(fd, size)
    seq, digest, keyed = 0, GENESIS, None  # no record yet: neither keyed nor not
    if end:
        seq, digest, keyed = _parse_last(line_before(fd, end))
    head = read_head(head_file)
    marks = {keyed, None if head is None else "mac" in head} - {None}
    chain = head_file.with_suffix(".jsonl")
    if key is None and True in marks:
        raise ChainKeyMismatch(keyed_chain(chain))
    if key is not None and False in marks:
        raise ChainKeyMismatch(unkeyed_chain(chain))
    if head is not None:
        hseq, hhash = head["seq"], head.get("hash")
        if key is not None and not hmac.compare_digest(
            str(head.get("mac", "")), head_mac(key, int(str(hseq)), str(hhash))
        ):
            raise ChainCorrupt("head file MAC does not match the key")
        if int(str(hseq)) > seq:
            raise ChainCorrupt(f"head says seq {hseq} but the chain ends at seq {seq}: tail cut")
        if hseq == seq and hhash != digest:
            raise ChainCorrupt(f"head hash differs from record {seq}")
    return Tail(seq=seq, hash=digest, end=end, torn=size - end)


def write_all(fd: int, data: bytes) -> None:
    held.write_all(fd, data)


HEAD_BYTES = 512  # the head document, padded: one sector, rewritten in place


def head_bytes(seq: int, digest: str, key: bytes | None, signer: Signer | None = None) -> bytes:
    """The head document padded to one sector: a crash leaves the old head or the new one.

    In place rather than temp-file-and-rename: one sync instead of three per batch
    (`bridge.audit.head`); a damaged head is reported by `verify`, never silently
    accepted. The bytes are `json.dumps(head_document(seq, digest, key), sort_keys=True)`
    (a test holds them equal), put together without the encoder; `signer`: the key's
    `Signer`, its pads hashed once (the writer's, for every head it puts)."""
    mac = ""
    if key is not None:
        mac = f', "mac": "{(signer or Signer(key)).head(seq, digest)}"'
    doc = f'{{"hash": "{digest}"{mac}, "seq": {int(seq)}}}'.encode("ascii")
    return doc.ljust(HEAD_BYTES - 1) + b"\n"


def put_head(fd: int, data: bytes, trim: bool = True) -> None:
    """Rewrite the head file open on `fd` in place (not synced: `HeadFile` does that);
    `trim`: cut whatever an older, longer head left after it (needed once per open)."""
    held.pwrite(fd, data, 0)
    if trim and os.fstat(fd).st_size > len(data):
        os.ftruncate(fd, len(data))
