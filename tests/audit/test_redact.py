"""Metadata only: no content or secret reaches the chain, whatever the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_helpers import fake_clock

from bridge.audit import AuditChain, redact, verify

MEMORY_BODY = "User prefers tabs.\nWhy: a reviewer insisted in 2024.\nHow to apply: always."
TOOL_SOURCE = "def run(params):\n    return sum(int(x) for x in params['xs'])\n"
MESSAGE_TEXT = "please remind me that my sister's birthday is on the fourth of March"
BULLET = "When applying skill deploy, double-check the user's intent before committing"
VAULT_VALUES = [
    "sk-proj-4f9XkQ2mZ8rT1vB6nL0pW3yH7cJ5dA",
    "sk-ant-api03-Zk8QmW2xT9vL4nB7",
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "xoxb-123456789012-abcdefABCDEF",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "123456789:AAHfHrE6Zq1kDgV9yF7xY2vKcW8tR4sN3mP",
    "Bearer abcdef0123456789",
    "https://user:hunter2@example.com/x",
    "Tr0ub4dor&3xQz9LmP2wK7vB",  # a password
    "q8Zr2LmX9vT4nB7kW1pY5cH3",  # random token
    "f3a9c2e1d4b5a6978877665544332211",  # a hex API key outside a hash field
]
CONTENT_KEYS = [
    "text",
    "content",
    "body",
    "prompt",
    "message",
    "source",
    "password",
    "token",
    "secret",
    "value",
    "arguments",
    "Text",
    "CONTENT",
    "messageText",
    "message_text",
    "tool-source",
    "api_key",
    "apiKey",
    "access_token",
    "mytoken",
    "bullet_body",
    "description",
    "new_value",
    "reason",
]


@pytest.mark.parametrize("key", CONTENT_KEYS)
def test_content_keys_are_dropped_and_named(key: str) -> None:
    out = redact({key: "short", "name": "me.x"})
    assert key not in out
    assert out["_dropped"] == [key]
    assert out["name"] == "me.x"


@pytest.mark.parametrize("secret", VAULT_VALUES)
def test_secret_shaped_values_dropped_under_any_key(secret: str) -> None:
    out = redact({"name": secret, "label": secret, "extra": {"x": secret}, "list": ["a", secret]})
    assert secret not in repr(out)
    assert out["_dropped"] == ["extra.x", "label", "list", "name"]


@pytest.mark.parametrize("content", [MEMORY_BODY, TOOL_SOURCE, MESSAGE_TEXT, BULLET, "x" * 201])
def test_prose_and_long_values_dropped_under_innocent_keys(content: str) -> None:
    out = redact({"foo": content, "nested": {"bar": content}, "items": [content]})
    assert content not in repr(out)
    assert set(out["_dropped"]) == {"foo", "nested.bar", "items"}


def test_metadata_survives() -> None:
    details = {
        "name": "me.daily_log",
        "hash_prefix": "ab12cd34",
        "source_sha256": "a" * 64,
        "duration_ms": 12.6,
        "outcome": "ok",
        "reply_chars": 420,
        "message_id": "tg:111:42",
        "prev_run_id": "web-7f3a",
        "skills": ["deploy", "review"],
        "error_kind": "timeout",
        "counts": {"saved": 2, "deleted": 0},
        "ok": True,
        "tenant_hint": None,
    }
    out = redact(details)
    assert out == {**details, "duration_ms": 13}


def test_measures_and_refs_with_content_words_must_be_numbers_or_slugs() -> None:
    out = redact(
        {
            "reply_chars": "twelve chars",
            "message_id": "hi there you",
            "secret_name": "github",
            "token_count": 3,
            "body_hash": "not hex!",
        }
    )
    assert out == {
        "secret_name": "github",
        "token_count": 3,
        "_dropped": ["body_hash", "message_id", "reply_chars"],
    }


def test_floats_never_reach_a_record() -> None:
    out = redact({"confidence": 0.8, "wait_ms": float("nan"), "took_ms": 1.4, "big": 2**60})
    assert out == {"took_ms": 1, "_dropped": ["big", "confidence", "wait_ms"]}


def test_structure_limits() -> None:
    class Obj:
        pass

    out = redact(
        {
            "deep": {"a": {"b": 1}},
            "obj": Obj(),
            "blob": b"bytes",
            "many": list(range(65)),
            "my password is hunter2": 1,
            7: "x",
            "_dropped": ["forged"],
        }
    )
    assert out == {
        "deep": {},
        "_dropped": sorted(["deep.a", "obj", "blob", "many", "<invalid-key>"]),
    }


@pytest.mark.stray_audit_fields  # sensitive fields nobody declared: the chain must drop them
async def test_nothing_sensitive_reaches_the_chain_file(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    sensitive = [MEMORY_BODY, TOOL_SOURCE, MESSAGE_TEXT, BULLET, *VAULT_VALUES]
    events = [
        "memory.saved",
        "tool.saved",
        "message.received",
        "style.promoted",
        "secret.used",
        "tool.called",
    ]
    async with AuditChain(path, None, fake_clock()) as chain:
        for event in events:
            for value in sensitive:
                details: dict[str, object] = {key: value for key in CONTENT_KEYS}
                details.update({"name": "n1", "other": value, "meta": {"v": value}, "l": [value]})
                await chain.emit(event, "alice", details)
    raw = path.read_text()
    assert verify(path).ok
    for value in sensitive:
        for fragment in value.splitlines():
            if len(fragment) >= 8:
                assert fragment not in raw
                assert fragment.replace("'", "\\u0027") not in raw


def test_a_key_or_slug_with_a_trailing_newline_is_not_taken_as_plain() -> None:
    """`$` matches before a final newline: the rules match the whole key and value."""
    out = redact({"ref\n": "x", "name": "abc\n"})
    assert "ref\n" not in out and out.get("name") != "abc\n"
