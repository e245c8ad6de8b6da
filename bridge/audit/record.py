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
from collections.abc import Callable, Mapping
from json import encoder as _json_encoder

GENESIS = "0" * 64
EVENT_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
TENANT_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
RECORD_FIELDS = frozenset({"seq", "ts", "event", "tenant", "details", "prev", "hash"})

_ENCODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True
).encode


def _details_encoder() -> Callable[[Mapping[str, object]], str]:
    """`canonical` for the details the writer made (`schema.sanitize`: str keys; str, int,
    bool and lists of them), through the C encoder `_ENCODE` itself calls, without its
    per-call set-up (half the time); `_ENCODE` where there is none."""
    make = getattr(_json_encoder, "c_make_encoder", None)
    if make is None:
        return _ENCODE
    # markers, default, encoder, indent, key and item separators, sort_keys, skipkeys,
    # allow_nan: as `_ENCODE` passes them, with no circular-reference markers (the
    # details the writer made hold no containers but lists of strings)
    iterencode = make(
        None,
        _unencodable,
        _json_encoder.encode_basestring_ascii,
        None,
        ":",
        ",",
        True,
        False,
        False,
    )
    return lambda details: "".join(iterencode(details, 0))


def _unencodable(obj: object) -> object:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


encode_details = _details_encoder()


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


class Signer:
    """HMAC-SHA256 under one key with the key's inner and outer pads hashed once
    (RFC 2104, as `hmac` computes it): a MAC is then two hash copies, not a new key
    schedule (a third of the time of `hmac.digest` per record)."""

    def __init__(self, key: bytes) -> None:
        if len(key) > 64:  # SHA-256's block: a longer key is hashed first (RFC 2104)
            key = hashlib.sha256(key).digest()
        block = key.ljust(64, b"\0")
        self._inner = hashlib.sha256(bytes(b ^ 0x36 for b in block))
        self._outer = hashlib.sha256(bytes(b ^ 0x5C for b in block))

    def mac(self, data: bytes) -> str:
        inner = self._inner.copy()
        inner.update(data)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.hexdigest()

    def record(self, digest: str) -> str:
        """`record_mac(key, digest)`."""
        return self.mac(digest.encode("ascii"))

    def head(self, seq: int, digest: str) -> str:
        """`head_mac(key, seq, digest)`."""
        return self.mac(f"head:{seq}:{digest}".encode("ascii"))


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


def record_line(
    seq: int,
    ts: int,
    event: str,
    tenant: str | None,
    details: Mapping[str, object],
    prev: str,
    signer: Signer | None,
) -> tuple[str, str]:
    """The writer's `build_record`: the line and the record's hash, byte for byte what
    `build_record` gives (a test holds them equal), with no record dict built, the
    details encoded by `encode_details` and the MAC by `signer` (None: unkeyed)."""
    enc = _ENCODE
    head = f'{{"details":{encode_details(details)},"event":{enc(event)}'
    tail = f',"prev":{enc(prev)},"seq":{_int(seq)},"tenant":{enc(tenant)},"ts":{_int(ts)}}}'
    digest = hashlib.sha256((prev + head + tail).encode("ascii")).hexdigest()
    if signer is None:
        return f'{head},"hash":"{digest}"{tail}\n', digest
    return f'{head},"hash":"{digest}","mac":"{signer.record(digest)}"{tail}\n', digest


def _int(n: object) -> str:
    """Canonical JSON of a sequence number or timestamp (an int is its decimal)."""
    return str(n) if type(n) is int else _ENCODE(n)


def head_document(seq: int, digest: str, key: bytes | None) -> dict[str, object]:
    head: dict[str, object] = {"seq": seq, "hash": digest}
    if key is not None:
        head["mac"] = head_mac(key, seq, digest)
    return head
