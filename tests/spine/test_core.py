"""The core: access, limits, routing, ordering and failures, in process."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.app.models import Generation
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import BackendError, ToolSchema
from bridge.types.messages import Inbound
from bridge.types.tools import FunctionTool, ToolError, TurnContext
from tests.conftest import Clock, ScriptedBackend


def msg(text: str, chat: str = "c1", channel: str = "web", identity: str = "local") -> Inbound:
    return Inbound(channel, identity, chat, text, os.urandom(4).hex())


@pytest.fixture
async def make(settings: Settings, clock: Clock) -> AsyncIterator[Any]:
    made: list[Roost] = []

    async def factory(*steps: object, tools: Any = (), delay: float = 0.0) -> Roost:
        roost = await build(
            settings,
            backend=ScriptedBackend(*steps, delay=delay),
            audit=MemoryAudit(),
            clock=clock,
            tool_sources=tools,
        )
        made.append(roost)
        return roost

    yield factory
    for roost in made:
        await roost.aclose()


async def test_unknown_identity_is_refused_and_nothing_else_happens(make: Any) -> None:
    roost = await make("should never be sent")
    final = await roost.core.handle(msg("hello", channel="telegram", identity="999"))
    assert final.kind == "refusal"
    assert "pair" in final.text
    assert roost.backend.requests == []
    assert [e[0] for e in roost.audit.events] == ["access.refused"]
    assert not (roost.settings.home / "tenants" / "999").exists()


async def test_turn_streams_and_stores(make: Any) -> None:
    roost = await make("Hello there, friend!")
    pieces: list[str] = []

    async def on_delta(p: str) -> None:
        pieces.append(p)

    final = await roost.core.handle(msg("hi"), on_delta)
    assert final.kind == "answer" and final.text == "Hello there, friend!"
    assert "".join(pieces) == final.text and len(pieces) > 1
    second = await roost.core.handle(msg("and again"))
    assert second.text == "ok"
    sent = roost.backend.requests[1].messages
    assert [m.content for m in sent if not m.content.startswith("[Now: ")] == [
        "hi",
        "Hello there, friend!",
        "and again",
    ]
    events = [e[0] for e in roost.audit.events]
    assert events.count("message.answered") == 2
    assert all("hi" not in json.dumps(e[2]) for e in roost.audit.events)


async def test_tenant_tree_is_private(make: Any) -> None:
    roost = await make("x")
    await roost.core.handle(msg("hi"))
    root = roost.settings.home / "tenants" / "local" / "global"
    for sub in ("", "memory", "skills", "forge/tools", "vault", "workspace"):
        assert (root / sub).is_dir()
        assert (root / sub).stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("text", "needle"),
    [("", "empty"), ("   \n ", "empty"), ("x" * 16_001, "16,001 characters; the limit is 16,000")],
)
async def test_empty_and_oversize_messages(make: Any, text: str, needle: str) -> None:
    roost = await make()
    final = await roost.core.handle(msg(text))
    assert final.kind == "error" and needle in final.text
    assert roost.backend.requests == []


async def test_help_lists_every_command_of_the_table(make: Any) -> None:
    roost = await make()
    reply = (await roost.core.handle(msg("/help all"))).text
    for cmd in roost.core.commands:
        assert cmd.usage in reply and cmd.summary in reply
    assert "/reset" in (await roost.core.handle(msg("/help reset"))).text
    usage = await roost.core.handle(msg("/help nosuch"))
    assert "Usage: /help [all | command]" in usage.text


async def test_short_help_lists_the_common_rows_with_a_more_button(make: Any) -> None:
    roost = await make()
    short = await roost.core.handle(msg("/help"))
    common = [cmd for cmd in roost.core.commands if cmd.common]
    assert {"help", "reset", "stop", "status", "memory", "remember"} <= {c.name for c in common}
    for cmd in roost.core.commands:
        assert (f"/{cmd.name} — {cmd.summary}" in short.text) == cmd.common, cmd.name
    assert [(a.command, a.in_place) for a in short.actions] == [("/help all", True)]
    assert len(short.text) < len((await roost.core.handle(msg("/help all"))).text) / 2


async def test_unknown_command_suggests(make: Any) -> None:
    roost = await make()
    final = await roost.core.handle(msg("/stauts"))
    assert final.kind == "command" and "/status" in final.text
    assert roost.backend.requests == []


async def test_command_addressed_to_bot_name(make: Any) -> None:
    roost = await make()
    assert "Tenant: local" in (await roost.core.handle(msg("/whoami@roost_bot"))).text


async def test_reset_and_status(make: Any, clock: Clock) -> None:
    roost = await make("one", "two", "three")
    await roost.core.handle(msg("a"))
    await roost.core.handle(msg("b"))
    status = (await roost.core.handle(msg("/status"))).text
    assert "Model: scripted test model" in status and "2 turns" in status
    assert "Tenant: local" in status
    await roost.core.handle(msg("/reset"))
    assert "new (no turns yet)" in (await roost.core.handle(msg("/status"))).text
    await roost.core.handle(msg("c"))
    assert [m.content for m in roost.backend.requests[-1].messages][1:] == ["c"]


async def test_idle_week_starts_fresh(make: Any, clock: Clock) -> None:
    roost = await make("first", "second")
    await roost.core.handle(msg("a"))
    clock.advance(7 * 86400 + 1)
    await roost.core.handle(msg("b"))
    assert [m.content for m in roost.backend.requests[-1].messages][1:] == ["b"]


async def test_one_chat_in_order_different_chats_concurrently(make: Any) -> None:
    active: dict[str, int] = {}
    overlap = {"same": 0, "cross": 0}
    order: list[str] = []

    def step(request: Any) -> str:
        text = request.messages[-1].content
        order.append(text)
        return f"re:{text}"

    class Probe(ScriptedBackend):
        async def stream(self, request: Any) -> Any:
            chat = request.messages[-1].content.split("-")[0]
            active[chat] = active.get(chat, 0) + 1
            if active[chat] > 1:
                overlap["same"] += 1
            if sum(1 for v in active.values() if v) > 1:
                overlap["cross"] += 1
            await asyncio.sleep(0.01)
            async for event in super().stream(request):
                yield event
            active[chat] -= 1

    roost = await make()
    roost.models.replace(Generation("default", {"default": Probe(*([step] * 20))}))
    sends = [roost.core.handle(msg(f"{c}-{i}", chat=c)) for i in range(10) for c in ("A", "B")]
    finals = await asyncio.gather(*sends)
    assert [f.text for f in finals] == [f"re:{c}-{i}" for i in range(10) for c in ("A", "B")]
    assert overlap["same"] == 0
    assert overlap["cross"] > 0
    assert [o for o in order if o.startswith("A")] == [f"A-{i}" for i in range(10)]
    assert len(roost.core.locks) == 0


async def test_crash_in_one_turn_does_not_hurt_the_next(make: Any) -> None:
    def boom(request: Any) -> str:
        raise RuntimeError("kaputt")

    roost = await make(boom, "fine")
    first = await roost.core.handle(msg("a"))
    assert first.kind == "error" and "ref" in first.text
    assert (await roost.core.handle(msg("b"))).text == "fine"


async def test_backend_error_reply_and_nothing_stored(make: Any) -> None:
    roost = await make(BackendError("rate_limited", "The model is busy; try again shortly."))
    final = await roost.core.handle(msg("a"))
    assert final.kind == "error" and final.text == "The model is busy; try again shortly."
    assert "new (no turns yet)" in (await roost.core.handle(msg("/status"))).text


def _echo_tool() -> FunctionTool:
    async def fn(args: Mapping[str, Any], turn: TurnContext) -> str:
        if args.get("fail"):
            raise ToolError("the value must be positive")
        return f"echo {args['value']} for {turn.tenant}"

    schema = ToolSchema("echo", "echo a value", {"type": "object", "properties": {}})
    return FunctionTool(schema, fn)


class Tools:
    def __init__(self, *tools: FunctionTool) -> None:
        self._tools = tools

    def tools_for(self, turn: TurnContext) -> Any:
        return self._tools


async def test_tool_calls_run_and_errors_go_back_to_the_model(make: Any) -> None:
    roost = await make(
        [("echo", '{"value": 3}'), ("echo", '{"fail": true}'), ("nope", "{}"), ("echo", "[1")],
        "done",
        tools=[Tools(_echo_tool())],
    )
    final = await roost.core.handle(msg("use the tool"))
    assert final.text == "done"
    second = roost.backend.requests[1]
    assert "echo" in [t.name for t in second.tools]
    results = [m.content for m in second.messages if m.role == "tool"]
    assert results[0] == "echo 3 for local"
    assert results[1] == "error: the value must be positive"
    assert "no tool named 'nope'" in results[2]
    assert "not a JSON object" in results[3]
    assert [m.role for m in second.messages] == ["user", "user", "assistant"] + ["tool"] * 4


async def test_step_limit_ends_the_loop(make: Any, settings: Settings) -> None:
    steps = [[("echo", '{"value": 1}')]] * 20
    roost = await make(*steps, tools=[Tools(_echo_tool())])
    final = await roost.core.handle(msg("loop forever"))
    assert f"stopped after {settings.llm.max_steps} tool steps" in final.text
    assert len(roost.backend.requests) == settings.llm.max_steps


async def test_start_up_maintenance_cleans_temps_and_rebuilds_the_index(make: Any) -> None:
    roost = await make()
    await roost.core.handle(msg("/remember I like green tea"))
    dirs = roost.tenant_dirs("local")
    index = dirs.memory / "MEMORY.md"
    before = index.read_text()
    index.write_text("stale\n")
    (dirs.memory / ".tmp-MEMORY.md.123.abcd").write_text("half a write")
    (roost.settings.home / "tenants" / "Not A Tenant").mkdir()
    assert roost.maintain() == 1
    assert index.read_text() == before
    assert not list(dirs.memory.glob(".tmp-*"))
