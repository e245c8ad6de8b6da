"""`ModelRequest.call_tool`: a backend whose model runs tools itself uses the agent's path.

Each call is masked, shown to the progress sink, kept as a tool step and counted
against the turn's step limit (past it the model is told to answer), exactly as
a `ToolCall` the loop runs itself.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from bridge.core.agent import run_agent
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta, ToolSchema
from bridge.types.messages import Inbound
from bridge.types.progress import ToolStep
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import FunctionTool, ToolError, TurnContext


class SelfRunning:
    """Calls `echo` (then `broken`) through `call_tool` n times, then answers."""

    name = "self-running"

    def __init__(self, n: int) -> None:
        self.n = n
        self.outputs: list[str] = []

    def describe(self) -> str:
        return "runs its own tools"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        assert request.call_tool is not None
        for i in range(self.n):
            args = json.dumps({"text": f"secret-{i}"})
            self.outputs.append(await request.call_tool("echo", args))
        self.outputs.append(await request.call_tool("broken", "{}"))
        yield TextDelta("done")
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


async def echo(args: Mapping[str, Any], turn: TurnContext) -> str:
    return "echo " + str(args["text"])


async def broken(args: Mapping[str, Any], turn: TurnContext) -> str:
    raise ToolError("it broke")


TOOLS = [
    FunctionTool(ToolSchema("echo", "Echo", {"type": "object"}), echo),
    FunctionTool(ToolSchema("broken", "Fails", {"type": "object"}), broken),
]


def turn_in(root: Path) -> TurnContext:
    return TurnContext(TenantDirs.of(root, "t1"), Inbound("web", "local", "c", "hi", "m1"), float)


async def test_calls_go_through_the_loops_tool_path(tmp_path: Path) -> None:
    backend = SelfRunning(2)
    turn = TurnContext(
        TenantDirs.of(tmp_path, "t1"), Inbound("web", "local", "c", "hi", "m1"), float
    )
    seen: list[Any] = []

    async def progress(event: Any) -> None:
        seen.append(event)

    result = await run_agent(
        backend, "sys", [], TOOLS, turn, max_steps=8, progress=progress,
        redact=lambda text: text.replace("secret", "[masked]"),
    )  # fmt: skip
    assert result.text == "done"
    assert backend.outputs == ["echo [masked]-0", "echo [masked]-1", "error: it broke"]
    assert [(r.name, r.ok) for r in result.tool_runs] == [
        ("echo", True), ("echo", True), ("broken", False),
    ]  # fmt: skip
    roles = [m.role for m in result.tool_steps]
    assert roles == ["assistant", "tool"] * 3  # each call a well-formed step
    assert result.tool_steps[0].tool_calls[0].arguments == '{"text": "[masked]-0"}'
    states = [e.state for e in seen if isinstance(e, ToolStep)]
    assert states == ["start", "done", "start", "done", "start", "error"]


async def test_calls_past_the_step_limit_are_refused(tmp_path: Path) -> None:
    backend = SelfRunning(5)
    turn = TurnContext(
        TenantDirs.of(tmp_path, "t1"), Inbound("web", "local", "c", "hi", "m1"), float
    )
    result = await run_agent(backend, "sys", [], TOOLS, turn, max_steps=3)
    assert len(result.tool_runs) == 3
    assert all("limit of 3 tool calls is reached" in out for out in backend.outputs[3:])
