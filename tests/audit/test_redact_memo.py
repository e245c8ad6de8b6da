"""The redactor remembers decisions per key name and kept values; never a looser one.

A value kept under one key is still judged afresh under a key with stricter
rules, a dropped value is dropped every time it comes back, and a key's
verdict is the same on the thousandth call as on the first.
"""

from __future__ import annotations

import pytest

from bridge.audit import redact
from bridge.grading.text import stem

SECRET = "sk-proj-4f9XkQ2mZ8rT1vB6nL0pW3yH7cJ5dA"


def test_repeated_calls_give_the_first_answer() -> None:
    details = {"channel": "web", "chat": "c1", "msg_id": "7-1", "chars": 12, "text": "hi there"}
    first = redact(details)
    for _ in range(3):
        assert redact(details) == first
    assert first["_dropped"] == ["text"] and first["chars"] == 12


def test_a_kept_value_is_judged_again_under_a_stricter_key() -> None:
    assert redact({"name": "deadbeef-not-hex"})["name"] == "deadbeef-not-hex"
    assert redact({"sha256": "deadbeef-not-hex"})["_dropped"] == ["sha256"]
    assert redact({"label": "web"})["label"] == "web"
    assert redact({"chars": "web"})["_dropped"] == ["chars"]  # a measure must be a number
    assert redact({"token_count": "web"})["_dropped"] == ["token_count"]
    assert redact({"token_count": 3})["token_count"] == 3
    assert redact({"label": "two words"})["label"] == "two words"
    assert redact({"token_id": "two words"})["_dropped"] == ["token_id"]  # rescued: slug only


@pytest.mark.parametrize("key", ["name", "label", "msg_id"])
def test_a_dropped_value_is_dropped_every_time(key: str) -> None:
    for _ in range(3):
        out = redact({key: SECRET, "extra": {"x": SECRET}, "list": ["a", SECRET]})
        assert SECRET not in repr(out)
        assert out["_dropped"] == sorted(["extra.x", key, "list"])


def test_forbidden_keys_stay_forbidden_at_any_depth_and_any_type() -> None:
    for _ in range(3):
        out = redact({"text": 5, "body": True, "nested": {"text": "x", "n": 1}})
        assert out == {"nested": {"n": 1}, "_dropped": ["body", "nested.text", "text"]}
    assert redact({"n": 2**53})["_dropped"] == ["n"]
    assert redact({"n": 2**53 - 1})["n"] == 2**53 - 1
    assert redact({"n": True, "m": None}) == {"n": True, "m": None}


def test_stem_is_remembered_but_unchanged() -> None:
    words = ["weather", "Wetterberichte", "running", "größten", "ok", "explanations"]
    assert [stem(w) for w in words] == [stem.__wrapped__(w) for w in words]
    assert [stem(w) for w in words] == [stem.__wrapped__(w) for w in words]
