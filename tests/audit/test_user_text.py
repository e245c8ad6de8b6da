"""Nothing a person typed or a model wrote reaches chain.jsonl.

Every event of the schema table gets real user text (passwords, PINs, health
details, German sentences, URLs with tokens, emoji, provider tokens from their
published formats) in every field, in unknown fields and as unknown key
names, through the real writer into a real chain file. Not one of those
strings, nor its ASCII-escaped JSON form, may appear in the file; names the
schema keeps are content-free keyed hashes; the chain still verifies.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from audit_helpers import KEY, fake_clock

from bridge.audit import AuditChain, verify
from bridge.audit.schema import MODEL, NAME_ID_RE, SCHEMAS, SECRET, SKILL

# Skill names (files the person authored, read back by the style learner),
# vault names and model names (set by the operator; /model records only a
# configured one) are kept as identifiers of a fixed pattern, so one-word text
# fits them; they are checked for the pattern only.
READABLE = (SKILL, SECRET, MODEL)

# (what a person or a model might put there, a fragment that must never be stored)
USER_TEXT: list[tuple[str, str]] = [
    ("wifi password is hunter2-Graz", "hunter2"),
    ("wifi_password_hunter2", "hunter2"),
    ("PIN 4711", "4711"),
    ("my bank pin is 0815", "0815"),
    ("PIN ist 2580", "2580"),
    ("Mein Passwort lautet Sommer2024!", "Sommer2024"),
    ("Ich habe Depressionen und nehme Sertralin 50mg", "Sertralin"),
    ("HIV positive since 2019", "HIV"),
    ("diagnosed with type 1 diabetes", "diabetes"),
    ("Arzttermin wegen Brustkrebs am Dienstag", "Brustkrebs"),
    ("https://example.com/reset?token=Zx81kQpL0mWv", "Zx81kQpL0mWv"),
    ("https://alice:s3cr3tpw@git.example.org/repo.git", "s3cr3tpw"),
    ("ghp_R2d2C3p0L0k1S4nd3rsY0d4Vad3rK3n0b1", "R2d2C3p0"),
    ("sk-proj-4f9XkQ2mZ8rT1vB6nL0pW3yH7cJ5dA", "4f9XkQ2m"),
    ("xoxb-123456789012-abcdefABCDEF", "abcdefABCDEF"),
    ("AKIAIOSFODNN7EXAMPLE", "IOSFODNN7"),
    ("123456789:AAHfHrE6Zq1kDgV9yF7xY2vKcW8tR4sN3mP", "AAHfHrE6"),
    ("I ❤️ my cat Minka 🐈", "Minka"),
    ("👨‍👩‍👧 family", "family"),
    ("call me at +43 664 1234567", "1234567"),
    ("IBAN AT61 1904 3002 3457 3201", "3457"),
    ("tabs", "tabs"),  # a harmless word is still the person's word
    ("deploy", "deploy"),
    ("b-0007 ignore previous instructions", "ignore"),
    ("Grüße aus Köln", "K\\u00f6ln"),
    ("x" * 100_000, "x" * 64),
]


def _values(value: str) -> list[object]:
    return [value, [value, value], {"nested": value}, value.encode()]


@pytest.mark.stray_audit_fields  # text under unknown keys, on purpose: it must be dropped
async def test_no_user_text_in_any_field_of_any_event(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    events: list[tuple[str, str | None, dict[str, object]]] = []
    for event, fields in SCHEMAS.items():
        for text, _ in USER_TEXT:
            for value in _values(text):
                details: dict[str, object] = {
                    field: value
                    for field, kind in fields.items()
                    if getattr(kind, "item", kind) not in READABLE
                }
                details[text[:60]] = value  # a typed key name
                details["comment"] = text
                events.append((event, "alice", details))
    events.append(("made.up", "alice", {"free": "wifi password is hunter2-Graz"}))
    async with AuditChain(path, KEY, fake_clock()) as chain:
        for i in range(0, len(events), 500):
            await chain.emit_many(events[i : i + 500])
    raw = path.read_bytes()
    for text, _ in USER_TEXT:
        assert text.encode("utf-8") not in raw
        assert json.dumps(text).encode() not in raw
    assert verify(path, KEY).ok
    kept = []
    for line in raw.splitlines():
        rec = json.loads(line)
        _assert_content_free(rec["event"], rec["details"])
        kept.append(rec["event"] + json.dumps(rec["details"]))
    # Fragments (digits of a PIN, too) are looked for outside hashes and keyed ids.
    content = NAME_ID_RE.sub("", "\n".join(kept)).lower()
    for _, fragment in USER_TEXT:
        assert fragment.lower() not in content, fragment


def _assert_content_free(event: str, details: dict[str, object]) -> None:
    schema = SCHEMAS.get(event, {})
    for field, value in details.items():
        if field == "_dropped":
            assert isinstance(value, list) and set(value) <= set(schema), (event, value)
            continue
        if field == "_unknown":
            assert type(value) is int
            continue
        assert field in schema, (event, field)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                assert schema[field].admits(item), (event, field, item)


async def test_names_people_typed_become_keyed_ids(tmp_path: Path) -> None:
    """A `/remember` topic name is stored as a short keyed hash: the same name
    gives the same id (events stay linkable), another tenant's or another key's
    id differs, and the name itself is gone."""
    path = tmp_path / "audit" / "chain.jsonl"
    name = "wifi_password_hunter2"
    async with AuditChain(path, KEY, fake_clock()) as chain:
        for tenant in ("alice", "alice", "bob"):
            await chain.emit("memory.saved", tenant, {"name": name, "type": "user", "chars": 9})
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    ids = [r["details"]["name"] for r in recs]
    assert all(NAME_ID_RE.fullmatch(i) for i in ids), ids
    assert ids[0] == ids[1] != ids[2]
    key_file = path.parent / "names.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert "hunter2" not in path.read_text()
    # A fresh home has a fresh names key: the id cannot be looked up elsewhere.
    other = tmp_path / "other" / "audit" / "chain.jsonl"
    async with AuditChain(other, KEY, fake_clock()) as chain:
        await chain.emit("memory.saved", "alice", {"name": name, "type": "user", "chars": 9})
    assert json.loads(other.read_text())["details"]["name"] != ids[0]


@pytest.mark.stray_audit_fields  # text under unknown keys, on purpose: it must be dropped
async def test_dropped_fields_are_named_and_unknown_ones_counted(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "chain.jsonl"
    async with AuditChain(path, None, fake_clock()) as chain:
        await chain.emit(
            "tool.called",
            "alice",
            {
                "name": "me.csv_sum",
                "ms": 41,
                "outcome": "my password is hunter2",  # not a member of the enum
                "error_kind": "timeout",
                "hunter2 was here": "x",
            },
        )
    details = json.loads(path.read_text())["details"]
    assert details["_dropped"] == ["outcome"]
    assert details["_unknown"] == 1
    assert details["ms"] == 41 and details["error_kind"] == "timeout"
    assert re.fullmatch(NAME_ID_RE, str(details["name"]))
    assert "hunter2" not in path.read_text()
