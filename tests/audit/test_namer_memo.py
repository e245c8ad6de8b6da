"""The keyed namer remembers ids it gave (a turn names its chat each time): the ids
are the keyed HMAC's, the same before and after the memo is full, per key."""

from __future__ import annotations

import hashlib
import hmac

from bridge.audit.schema import NAMER_MEMO, keyed_namer

KEY = b"k" * 32


def plain(key: bytes, kind: str, tenant: str | None, name: str) -> str:
    msg = f"{kind}\0{tenant or ''}\0{name}".encode("utf-8", "surrogatepass")
    return "n-" + hmac.new(key, msg, hashlib.sha256).hexdigest()[:16]


def test_remembered_ids_are_the_keyed_ones_past_a_full_memo() -> None:
    namer = keyed_namer(KEY)
    names = [("chat", "alice", f"c{i}") for i in range(NAMER_MEMO + 50)]
    names += [("chat", None, "c1"), ("tool", "alice", "c1"), ("chat", "bob", "c1")]
    for _ in range(2):  # the second round: remembered, or past a clear
        for kind, tenant, name in names:
            assert namer(kind, tenant, name) == plain(KEY, kind, tenant, name)
    assert len({namer(*n) for n in names}) == len(names)


def test_two_keys_never_share_a_memo() -> None:
    first, second = keyed_namer(KEY), keyed_namer(b"j" * 32)
    assert first("chat", "alice", "c1") != second("chat", "alice", "c1")
    assert second("chat", "alice", "c1") == plain(b"j" * 32, "chat", "alice", "c1")
