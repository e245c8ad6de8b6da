"""Check a chain end to end, and read its most recent records.

`verify()` reports the first violation: invalid_json, duplicate_key (a key
given twice in one object: a parser keeps one value, a reader may see the
other), not_canonical (the line is not byte for byte the writer's canonical
encoding of its record: CRLF, spaces, escapes, key order), tampered (a record's
hash does not match its content), sequence_gap (deleted, swapped or replayed
records), broken_link (`prev` differs from the previous record's hash),
bad_mac (with the key), truncated_tail (the head file names a record the
chain no longer has). OSError means the chain cannot be read at all.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.audit.record import GENESIS, RECORD_FIELDS, canonical, head_mac, record_mac
from bridge.audit.store import ChainCorrupt, head_path, read_head

_FIELDS = frozenset(RECORD_FIELDS)
_FIELDS_MAC = _FIELDS | {"mac"}


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    records: int
    first_bad_seq: int | None = None
    kind: str | None = None
    message: str = "chain intact"
    line: int | None = None


def _bad(records: int, seq: int | None, kind: str, message: str, line: int | None) -> VerifyResult:
    return VerifyResult(False, records, seq, kind, message, line)


def _load_head(path: Path) -> dict[str, object] | str | None:
    try:
        return read_head(path)
    except ChainCorrupt as exc:
        return "head file is not JSON" if "not JSON" in str(exc) else "head file is malformed"


class _DuplicateKey(ValueError):
    """A JSON object names the same key twice."""


def _unique_pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKey
    return obj


_STRICT_LOADS = json.JSONDecoder(object_pairs_hook=_unique_pairs).decode


def _encoding_fault(line: str, rec: dict[str, Any]) -> str | None:
    """None when `line` is the canonical encoding of `rec`, else the violation's kind.

    Equality with the canonical form is checked first (one encode, the common
    case); only a line that differs is parsed again to tell a duplicated key,
    which the first parse silently collapsed, from any other deviation.
    """
    try:
        if canonical(rec) == line:
            return None
    except ValueError:
        return "not_canonical"
    try:
        _STRICT_LOADS(line)
    except _DuplicateKey:
        return "duplicate_key"
    except ValueError:
        pass
    return "not_canonical"


def _hash_ok(line: str, rec: dict[str, Any], digest: str, sha256: Callable[..., Any]) -> bool:
    """Fast path: the line as written minus `hash`/`mac` (identical to the canonical
    JSON for every line the writer produced); else recompute the canonical form."""
    prev = str(rec["prev"])
    cut = line.rfind(',"hash":"')
    if cut > 0:
        rest = line[cut + 74 :]
        if rest.startswith(',"mac":"'):
            rest = rest[73:]
        raw = prev + line[:cut] + rest
        if sha256(raw.encode("utf-8", "surrogateescape")).hexdigest() == digest:
            return True
    body = {k: v for k, v in rec.items() if k != "hash" and k != "mac"}
    try:
        canon = canonical(body)
    except ValueError:
        return False
    return bool(sha256((prev + canon).encode("utf-8", "surrogateescape")).hexdigest() == digest)


def _lines(path: Path) -> Iterator[tuple[str, bool]]:
    """Each line of the file without its newline, and whether it had one.

    Reads one line at a time, so memory stays bounded by the longest line
    whatever the chain's length. Only the last line can lack its newline.
    """
    with path.open("rb") as f:
        for raw in f:
            done = raw.endswith(b"\n")
            yield (raw[:-1] if done else raw).decode("utf-8", "surrogateescape"), done


def verify(path: Path, hmac_key: bytes | None = None) -> VerifyResult:
    """Walk the whole chain, streaming; raise OSError when it cannot be read."""
    loads, sha256 = json.loads, hashlib.sha256
    head = _load_head(head_path(path))
    head_seq = head["seq"] if isinstance(head, dict) else None
    head_hash_seen: str | None = None
    prev, expected, lineno = GENESIS, 1, 0
    for lineno, (line, done) in enumerate(_lines(path), 1):
        if not done:
            count = expected - 1
            msg = f"torn last line after record {count} ({len(line)} bytes; an interrupted append)"
            return _bad(count, expected, "invalid_json", msg, lineno)
        checked = _check_line(line, lineno, expected, prev, hmac_key, loads, sha256)
        if isinstance(checked, VerifyResult):
            return checked
        if expected == head_seq:
            head_hash_seen = checked
        prev, expected = checked, expected + 1
    return _check_head(head, head_hash_seen, expected - 1, hmac_key)


def _is_record(rec: object) -> bool:
    """A JSON object with exactly the record's fields, typed as the writer writes them."""
    if type(rec) is not dict:
        return False
    keys = rec.keys()
    return (
        keys in (_FIELDS, _FIELDS_MAC)
        and type(rec["seq"]) is int
        and isinstance(rec["prev"], str)
        and isinstance(rec["hash"], str)
    )


def _check_line(
    line: str,
    lineno: int,
    expected: int,
    prev: str,
    hmac_key: bytes | None,
    loads: Callable[[str], Any],
    sha256: Callable[..., Any],
) -> VerifyResult | str:
    """The hash of line `lineno` if it is record `expected` linked to `prev`, else the fault."""
    n = expected - 1
    try:
        rec = loads(line)
    except ValueError:
        return _bad(n, expected, "invalid_json", f"line {lineno} is not JSON", lineno)
    if not _is_record(rec):
        return _bad(n, expected, "invalid_json", f"line {lineno} is not a record", lineno)
    digest, mac, seq = rec["hash"], rec.get("mac"), rec["seq"]
    fault = _encoding_fault(line, rec)
    if fault is not None:
        what = "a key twice" if fault == "duplicate_key" else "a non-canonical encoding"
        msg = f"record {seq} (line {lineno}) has {what}"
        return _bad(n, seq, fault, msg, lineno)
    if not _hash_ok(line, rec, digest, sha256):
        msg = f"record {seq} (line {lineno}): hash does not match its content"
        return _bad(n, seq, "tampered", msg, lineno)
    if seq != expected:
        msg = f"line {lineno} holds seq {seq} where {expected} was expected"
        return _bad(n, seq, "sequence_gap", msg, lineno)
    if rec["prev"] != prev:
        msg = f"record {seq} does not link to the hash of record {seq - 1}"
        return _bad(n, seq, "broken_link", msg, lineno)
    if hmac_key is not None and not (
        isinstance(mac, str) and hmac.compare_digest(mac, record_mac(hmac_key, digest))
    ):
        return _bad(n, seq, "bad_mac", f"record {seq}: MAC missing or wrong", lineno)
    return str(digest)


def _check_head(
    head: dict[str, object] | str | None, seen: str | None, count: int, key: bytes | None
) -> VerifyResult:
    if isinstance(head, str):
        return _bad(count, None, "tampered", head, None)
    if head is None:
        if count == 0:
            return VerifyResult(True, 0)
        return _bad(count, None, "truncated_tail", "head file missing", None)
    hseq = int(str(head["seq"]))
    if hseq > count:
        msg = f"head names record {hseq} but the chain ends at record {count}: tail cut"
        return _bad(count, count + 1, "truncated_tail", msg, None)
    if hseq > 0 and head.get("hash") != seen:
        return _bad(count, hseq, "tampered", f"head hash differs from record {hseq}", None)
    if key is not None and not hmac.compare_digest(
        str(head.get("mac", "")), head_mac(key, hseq, str(head.get("hash")))
    ):
        return _bad(count, hseq, "bad_mac", "head file MAC missing or wrong", None)
    return VerifyResult(True, count)


def _reverse_lines(path: Path, block: int = 64 * 1024) -> Iterator[bytes]:
    with path.open("rb") as f:
        pos = f.seek(0, os.SEEK_END)
        rest = b""
        while pos > 0:
            start = max(0, pos - block)
            f.seek(start)
            chunk = f.read(pos - start) + rest
            parts = chunk.split(b"\n")
            rest = parts[0]
            yield from reversed(parts[1:])
            pos = start
        yield rest


def tail(
    path: Path, n: int = 20, type: str | None = None, tenant: str | None = None
) -> list[dict[str, object]]:
    """The last `n` records (oldest first), optionally of one event type or tenant."""
    found: list[dict[str, object]] = []
    if n <= 0:
        return found
    for raw in _reverse_lines(path):
        try:
            rec = json.loads(raw)
        except ValueError:
            continue  # blank or torn line
        if not isinstance(rec, dict):
            continue
        if (type is None or rec.get("event") == type) and (
            tenant is None or rec.get("tenant") == tenant
        ):
            found.append(rec)
            if len(found) >= n:
                break
    found.reverse()
    return found
