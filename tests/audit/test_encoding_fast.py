"""The writer's encoding is the documented one, byte for byte.

The writer builds each line without a record dict (`record.record_line`), encodes the
details through the C encoder without its per-call set-up, MACs with the key's pads
hashed once (`record.Signer`), and puts the head's bytes together without the encoder
(`store.head_bytes`): each is held equal here to the reference it replaces
(`build_record`, `hmac`, `json.dumps` of `head_document`).
"""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from bridge.audit.catalogue import EVENTS
from bridge.audit.record import GENESIS, Signer, build_record, head_document, record_line
from bridge.audit.store import HEAD_BYTES, head_bytes

KEYS = [None, b"k" * 16, b"test-hmac-key-0123456789abcdef", b"y" * 64, b"z" * 65, b"w" * 300]


@pytest.mark.parametrize("key", KEYS, ids=lambda k: "none" if k is None else f"{len(k)}B")
def test_record_line_is_build_records_line_for_every_catalogued_event(key: bytes | None) -> None:
    signer = Signer(key) if key is not None else None
    prev = GENESIS
    for i, (event, example) in enumerate(sorted(EVENTS.items()), 1):
        details = {**example, "_dropped": ["chat", "name"], "_unknown": 2}
        tenant = "alice" if i % 2 else None
        record, line = build_record(
            seq=i, ts=1_800_000_000_000 + i, event=event, tenant=tenant,
            details=details, prev=prev, key=key,
        )  # fmt: skip
        fast, digest = record_line(i, 1_800_000_000_000 + i, event, tenant, details, prev, signer)
        assert fast == line
        assert digest == record["hash"]
        prev = digest


@pytest.mark.parametrize("key", KEYS[1:], ids=lambda k: f"{len(k)}B")
def test_signer_is_hmac_sha256(key: bytes) -> None:
    signer = Signer(key)
    for data in (b"", b"a" * 64, bytes(range(256)) * 3):
        assert signer.mac(data) == hmac.new(key, data, hashlib.sha256).hexdigest()
    assert signer.head(7, "ab" * 32) == hmac.new(key, b"head:7:" + b"ab" * 32, "sha256").hexdigest()


@pytest.mark.parametrize("key", [None, KEYS[2], KEYS[4]], ids=["none", "30B", "65B"])
def test_head_bytes_are_the_padded_json_of_the_head_document(key: bytes | None) -> None:
    for seq in (0, 1, 12_345_678_901):
        digest = hashlib.sha256(str(seq).encode()).hexdigest()
        doc = json.dumps(head_document(seq, digest, key), sort_keys=True).encode()
        want = doc.ljust(HEAD_BYTES - 1) + b"\n"
        assert head_bytes(seq, digest, key) == want
        if key is not None:
            assert head_bytes(seq, digest, key, Signer(key)) == want
