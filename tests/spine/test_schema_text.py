"""A tool's parameter schema is JSON-encoded once per schema object, not every turn, and
masked once per (schema, masker): anew when the vault changed (a new masker)."""

from __future__ import annotations

import json

import pytest

from bridge.core import mask_memo
from bridge.core.mask_memo import MaskMemo
from bridge.types.backend import ToolSchema
from tests.masking import CountingMasker

memo = MaskMemo()  # what these tests mask is remembered here, as a turn runner's


def test_encoded_once_per_object_and_a_new_object_is_encoded_anew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoded: list[object] = []
    real = json.dumps

    def counting(obj: object, **kw: object) -> str:
        encoded.append(obj)
        return real(obj, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(mask_memo.json, "dumps", counting)
    params = {"type": "object", "properties": {"city": {"type": "string"}}}
    schema = ToolSchema("weather", "the weather", params)
    first = memo._redacted_schema(schema, lambda t: t)
    again = memo._redacted_schema(schema, lambda t: t)
    assert first == again == schema
    assert encoded.count(params) == 1

    changed = {"type": "object", "properties": {"town": {"type": "string"}}}
    masked = memo._redacted_schema(
        ToolSchema("weather", "the weather", changed), lambda t: t.replace("town", "[vault:T]")
    )
    assert masked.parameters == {"type": "object", "properties": {"[vault:T]": {"type": "string"}}}


def test_a_schema_is_masked_once_per_masker_and_anew_when_the_vault_changes() -> None:
    from bridge.loadout.mask import Masker

    params = {"type": "object", "properties": {"town": {"type": "string"}}}
    schema = ToolSchema("weather", "the weather in town", params)
    plain = CountingMasker(Masker({}))
    first = memo.schema(schema, plain.mask)
    assert first == schema and plain.calls == 2  # the parameters' text and the description
    assert memo.schema(schema, plain.mask) is first  # same masker: kept
    assert plain.calls == 2

    vault = CountingMasker(Masker({"T": "town"}))  # the vault changed: a new masker masks anew
    masked = memo.schema(schema, vault.mask)
    assert masked.description == "the weather in [vault:T]"
    assert masked.parameters == {"type": "object", "properties": {"[vault:T]": {"type": "string"}}}
    copy = ToolSchema("weather", "the weather in town", dict(params))  # another object
    assert memo.schema(copy, plain.mask) == schema and plain.calls == 4
    # a plain function is not remembered (nothing to key on): masked every time
    assert memo.schema(schema, lambda t: t.upper()).description == "THE WEATHER IN TOWN"


def test_history_is_masked_once_per_masker_and_anew_when_the_vault_changes() -> None:
    from bridge.loadout.mask import Masker
    from bridge.types.backend import ChatMessage

    said = ChatMessage("user", "my token is hunter2-secret-value, keep it")
    before = Masker({})
    first = memo.message(said, before.mask)
    assert first.content == said.content
    assert memo.message(said, before.mask) is first  # same masker: kept

    after = Masker({"TOKEN": "hunter2-secret-value"})  # the vault changed: a new masker
    masked = memo.message(said, after.mask)
    assert masked.content == "my token is [vault:TOKEN], keep it"
    assert memo.message(said, lambda t: t.upper()).content == said.content.upper()


def test_a_whole_history_is_masked_once_and_only_new_messages_after() -> None:
    from bridge.loadout.mask import Masker
    from bridge.types.backend import ChatMessage

    history = [ChatMessage("user", f"turn {i}: the key is hunter2-secret-value") for i in range(50)]
    counting = CountingMasker(Masker({"KEY": "hunter2-secret-value"}))
    first = memo.history(history, counting.mask)
    assert counting.calls == 50
    assert all(m.content.endswith("the key is [vault:KEY]") for m in first)
    history.append(ChatMessage("assistant", "noted: hunter2-secret-value"))
    again = memo.history(history, counting.mask)
    assert counting.calls == 51  # only the new message
    assert again[:50] == first and all(a is b for a, b in zip(again, first, strict=False))
    assert again[50].content == "noted: [vault:KEY]"
    other = CountingMasker(Masker({}))  # the vault changed: a new masker masks everything anew
    assert [m.content for m in memo.history(history, other.mask)] == [m.content for m in history]
    assert other.calls == 51
