"""The tools a model step offers (`MaskMemo.offered`) against the plain computation, and
a saved tool's object made once per catalog entry (`ForgeTools.tools_for`).

Differential: seeded random steps (the same tool objects again, a tool made anew
with an equal schema, a tool whose schema object was replaced, a tool added or
dropped, the list reordered, a vault value in a description or a parameter name,
another tenant's masker in between, a new masker for a changed vault, a plain
function as the masker) must give exactly `{name: tool}` and
`_redacted_schema(schema, mask)` of each tool in order; an unchanged list under the
same masker is masked no more.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.core.mask_memo import MaskMemo
from bridge.loadout.mask import Masker
from bridge.personal_tools.source import ForgeTools
from bridge.types.backend import ToolSchema
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext
from forge.toolmeta import ToolMeta
from tests.masking import CountingMasker

memo = MaskMemo()  # what these tests mask is remembered here, as a turn runner's

SECRETS = ("hunter2-secret-value", "town-of-secrets")


@dataclass
class MutableTool:
    """A tool whose schema may be replaced in place (the loop must not rely on it)."""

    schema: ToolSchema

    async def __call__(self, args: Any, turn: TurnContext) -> str:
        return "ok"


def _tool(rng: random.Random, n: int) -> MutableTool:
    word = rng.choice(("city", "town-of-secrets", "query", "hunter2-secret-value"))
    params = {"type": "object", "properties": {word: {"type": "string"}}}
    description = rng.choice(("the weather", "look up hunter2-secret-value", "a note"))
    return MutableTool(ToolSchema(f"tool_{n}", description, params))


def _plain(tools: list[MutableTool], redact: Any) -> tuple[dict[str, Any], tuple[ToolSchema, ...]]:
    return {t.schema.name: t for t in tools}, tuple(
        memo._redacted_schema(t.schema, redact) for t in tools
    )


def test_every_step_equals_the_plain_computation() -> None:
    rng = random.Random(21)
    maskers = [Masker({"A": SECRETS[0]}), Masker({"B": SECRETS[1]}), Masker({})]
    lists = [[_tool(rng, i) for i in range(4)], [_tool(rng, 10 + i) for i in range(2)]]
    for n in range(600):
        who = rng.randrange(2)
        tools = lists[who]
        step = rng.random()
        if step < 0.1 and tools:  # a tool made anew, equal schema
            i = rng.randrange(len(tools))
            tools[i] = MutableTool(tools[i].schema)
        elif step < 0.2 and tools:  # the same tool object, its schema replaced
            i = rng.randrange(len(tools))
            tools[i].schema = _tool(rng, n).schema
        elif step < 0.3:
            tools.append(_tool(rng, 100 + n))
        elif step < 0.4 and tools:
            tools.pop(rng.randrange(len(tools)))
        elif step < 0.5:
            rng.shuffle(tools)
        elif step < 0.55:  # the vault changed: a new masker
            maskers[who] = Masker({"X": rng.choice(SECRETS)} if rng.random() < 0.5 else {})
        mask = maskers[who] if rng.random() < 0.85 else rng.choice(maskers)
        redact: Any = mask.mask if rng.random() < 0.9 else (lambda t, m=mask: m.mask(t).upper())
        by_name, schemas = memo.offered(list(tools), redact)
        plain_names, plain_schemas = _plain(tools, redact)
        assert dict(by_name) == plain_names and all(by_name[k] is v for k, v in plain_names.items())
        assert schemas == plain_schemas, n


def test_an_unchanged_list_is_not_masked_again() -> None:
    rng = random.Random(3)
    tools = [_tool(rng, i) for i in range(3)]
    counting = CountingMasker(Masker({"A": SECRETS[0]}))
    first = memo.offered(tools, counting.mask)
    calls = counting.calls
    again = memo.offered(list(tools), counting.mask)
    assert again[0] is first[0] and again[1] is first[1] and counting.calls == calls
    tools[1].schema = ToolSchema("tool_1", "now about hunter2-secret-value", {"type": "object"})
    changed = memo.offered(tools, counting.mask)
    assert changed[1][1].description == "now about [vault:A]"


class _Catalog:
    def __init__(self, entries: tuple[ToolMeta, ...]) -> None:
        self.now = entries

    def entries(self, tools_dir: Path) -> tuple[ToolMeta, ...]:
        return self.now


def _meta(name: str, description: str) -> ToolMeta:
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    return ToolMeta(name, description, schema, (), "0" * 64, 0)


def test_a_saved_tool_is_the_same_object_while_its_entry_is(tmp_path: Path) -> None:
    catalog = _Catalog((_meta("weather", "the weather"), _meta("notes", "a note")))
    forge: Any = ForgeTools(None, None, catalog, None, None, lambda d: None)  # type: ignore[arg-type]
    turn = TurnContext(TenantDirs.of(tmp_path, "alice"), Inbound("web", "a", "c", "x", "1"), float)
    first = forge.tools_for(turn)
    again = forge.tools_for(turn)
    assert [t.schema.name for t in first] == ["forge_create", "me__weather", "me__notes"]
    assert all(a is b for a, b in zip(first, again, strict=True))
    catalog.now = (_meta("weather", "the weather, hourly"), catalog.now[1])  # one file changed
    changed = forge.tools_for(turn)
    assert changed[1] is not first[1] and changed[2] is first[2]
    assert changed[1].schema.description == "me.weather — the weather, hourly"
