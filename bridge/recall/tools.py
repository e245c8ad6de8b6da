"""The model's `recall(query, k)` tool and the `/recall QUERY` chat command.

Both run `Recall.find` over the tenant's index and answer with dated
excerpts and the turns around each hit; both audit `recall.searched` with
counts only. The tool is offered on every turn (a ToolSource); the command
is a row of the chat command table, so it works in every channel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bridge.core.commands import Command, CommandContext, UsageError
from bridge.recall.search import MAX_K
from bridge.recall.service import Recall
from bridge.types.backend import ToolSchema
from bridge.types.tools import FunctionTool, Tool, ToolError, TurnContext

RECALL = ToolSchema(
    "recall",
    "Search everything said in earlier chats with this person (all channels, and imported "
    "history): returns dated excerpts with the turns around each hit. Use it when they refer "
    "to something earlier, ask what they said about something, or the answer needs a date.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "words to look for (names, topics)"},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K, "description": "hits, 5"},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)
NOTHING = "Nothing found in earlier conversations for that."
USAGE = "/recall <words>"


def _k(value: object, default: int = 5) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError("argument 'k' must be an integer")
    return max(1, min(value, MAX_K))


class RecallTools:
    def __init__(self, recall: Recall) -> None:
        self._recall = recall
        self._tools: tuple[Tool, ...] = (FunctionTool(RECALL, self.run),)

    def tools_for(self, turn: TurnContext) -> Sequence[Tool]:
        return self._tools

    async def run(self, args: Mapping[str, Any], turn: TurnContext) -> str:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("argument 'query' must be a non-empty string")
        k = _k(args.get("k"))
        found = await self._recall.find(turn.dirs, query, k)
        await self._recall.searched(turn.dirs, "model", query, k, found)
        if not found.hits:
            return NOTHING
        return await self._recall.render(turn.dirs, found.hits)


class RecallCommands:
    def __init__(self, recall: Recall) -> None:
        self._recall = recall

    def commands(self) -> Iterable[Command]:
        return (Command("recall", USAGE, "search everything said in earlier chats", self.recall),)

    async def recall(self, ctx: CommandContext, args: str) -> str:
        query = args.strip()
        if not query:
            raise UsageError("Say what to look for.")
        found = await self._recall.find(ctx.dirs, query, 5)
        await self._recall.searched(ctx.dirs, "person", query, 5, found)
        if not found.hits:
            return NOTHING
        return await self._recall.render(ctx.dirs, found.hits)
