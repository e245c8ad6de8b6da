"""Pure record arithmetic of the audit chain: canonical JSON, hashes, MACs.

A record is `{"seq", "ts", "event", "tenant", "details", "prev", "hash"}`
(+ `"mac"` when the chain is keyed). `hash` is the SHA-256 hex of the previous
record's hash followed by the canonical JSON of the record without `hash` and
`mac`; `mac` is HMAC-SHA256(key, hash). The head file beside the chain holds
`{"seq", "hash"}` (+ `"mac"` = HMAC-SHA256(key, "head:<seq>:<hash>")).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping

GENESIS = "0" * 64
EVENT_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
TENANT_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
RECORD_FIELDS = frozenset({"seq", "ts", "event", "tenant", "details", "prev", "hash"})

_ENCODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True
).encode


def canonical(obj: object) -> str:
    """Sorted keys, compact separators, ASCII only, no NaN/Infinity."""
    return _ENCODE(obj)


def record_hash(prev: str, body: Mapping[str, object]) -> str:
    """SHA-256 hex over `prev` followed by the canonical JSON of `body`."""
    return hashlib.sha256((prev + canonical(body)).encode("ascii")).hexdigest()


def record_mac(key: bytes, digest: str) -> str:
    return hmac.digest(key, digest.encode("ascii"), "sha256").hex()


def head_mac(key: bytes, seq: int, digest: str) -> str:
    return hmac.digest(key, f"head:{seq}:{digest}".encode("ascii"), "sha256").hex()


def check_event(event: str) -> None:
    if len(event) > 64 or not EVENT_RE.match(event):
        raise ValueError(f"audit event name must look like 'area.action', got {event[:64]!r}")


def check_tenant(tenant: str | None) -> None:
    if tenant is not None and not TENANT_RE.match(tenant):
        raise ValueError("audit tenant must be a tenant id or None")


def build_record(
    *,
    seq: int,
    ts: int,
    event: str,
    tenant: str | None,
    details: Mapping[str, object],
    prev: str,
    key: bytes | None,
) -> tuple[dict[str, object], str]:
    """Return the record and its line (canonical JSON + newline).

    The line is put together from the canonical JSON of each field, in the
    sorted key order `canonical` would use, so `details` is encoded once;
    the result is byte-identical to `canonical(record)`.
    """
    body: dict[str, object] = {
        "seq": seq,
        "ts": ts,
        "event": event,
        "tenant": tenant,
        "details": dict(details),
        "prev": prev,
    }
    enc = _ENCODE
    head = f'{{"details":{enc(body["details"])},"event":{enc(event)}'
    tail = f',"prev":{enc(prev)},"seq":{_int(seq)},"tenant":{enc(tenant)},"ts":{_int(ts)}}}'
    digest = hashlib.sha256((prev + head + tail).encode("ascii")).hexdigest()
    body["hash"] = digest
    signed = f',"hash":"{digest}"'
    if key is not None:
        mac = record_mac(key, digest)
        body["mac"] = mac
        signed += f',"mac":"{mac}"'
    return body, f"{head}{signed}{tail}\n"


def _int(n: object) -> str:
    """Canonical JSON of a sequence number or timestamp (an int is its decimal)."""
    return str(n) if type(n) is int else _ENCODE(n)


def head_document(seq: int, digest: str, key: bytes | None) -> dict[str, object]:
    head: dict[str, object] = {"seq": seq, "hash": digest}
    if key is not None:
        head["mac"] = head_mac(key, seq, digest)
    return head
