"""The model's memory tools: memory_save, memory_read, memory_delete (a ToolSource).

Schemas follow the contract in DESIGN.md. Refusals (secrets, invisible
characters, instructions, a full index, bad arguments) come back to the model
as tool errors that say what to do; nothing is written then, and the refused
arguments go to `TurnContext.refused`, so the turn stores their secrets masked. A save that
meets a full memory also ends the reply with a notice and a "Tidy up memory"
action (`/memory tidy`: the chat's model proposes merges, the person applies).
A save that succeeds ends the reply with a marker ("📝 Saved to memory: name",
naming the topics on the same subject it replaced) and an "↩ Undo memory"
action (`/memory undo <name>`: reverts it while it is the newest memory change).
A deletion ends it with "🗑 Deleted from memory: name" and an "↩ Undo deleting"
action (`/memory undo #<ref>`: brings back that very deletion, even after later
changes), so the person knows, on every channel and in a scheduled job's turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bridge.memory import journal
from bridge.memory.files import MAX_DESCRIPTION, MAX_NAME, TYPES, usage_label
from bridge.memory.service import Memory
from bridge.memory.store import MemoryFull, MemoryRefused, Provenance
from bridge.types.backend import ToolSchema
from bridge.types.messages import Action
from bridge.types.tools import FunctionTool, Tool, ToolError, TurnContext

TIDY = Action("Tidy up memory", "/memory tidy")
FULL_NOTICE = "🧠 My memory is full, so I could not save a note. Tidy it up: /memory tidy"

_NAME = {"type": "string", "description": f"short topic name, 1-{MAX_NAME} characters"}

SAVE = ToolSchema(
    "memory_save",
    "Save or update one memory topic about this person (same name updates it). Save only "
    "what they stated or confirmed; never secrets. Shows in the prompt from the next message.",
    {
        "type": "object",
        "properties": {
            "name": _NAME,
            "type": {"type": "string", "enum": list(TYPES)},
            "description": {
                "type": "string",
                "description": f"one-line summary for the index, at most {MAX_DESCRIPTION}",
            },
            "content": {"type": "string", "description": "the full note (markdown)"},
        },
        "required": ["name", "type", "description", "content"],
        "additionalProperties": False,
    },
)


def _by_name(name: str, description: str) -> ToolSchema:
    schema = {
        "type": "object",
        "properties": {"name": _NAME},
        "required": ["name"],
        "additionalProperties": False,
    }
    return ToolSchema(name, description, schema)


READ = _by_name(
    "memory_read", "Read one memory topic in full (its name as shown in the memory index)."
)
DELETE = _by_name(
    "memory_delete",
    "Delete one memory topic that is wrong or stale (the person can /memory undo).",
)


def undo_action(name: str) -> Action:
    """The one-tap undo of a save: reverts it while it is the newest memory change."""
    return Action(f"↩ Undo memory {name!r}", f"/memory undo {name}")


def marked(turn: TurnContext, name: str, created: bool, replaced: Sequence[str] = ()) -> None:
    """A saved memory shows under the answer ("📝 Saved to memory: name") with its undo;
    other topics the save `replaced` (same subject, now removed) are named."""
    line = f"📝 {'Saved to' if created else 'Updated'} memory: {name}"
    if replaced:
        line += f" (replaces {', '.join(repr(n) for n in replaced)})"
    turn.notices.append(line)
    undo = undo_action(name)
    if undo not in turn.actions:
        turn.actions.append(undo)


def deleted(turn: TurnContext, name: str, ref: str) -> None:
    """A deletion shows under the answer with an undo of that deletion (`/memory undo #ref`)."""
    turn.notices.append(f"🗑 Deleted from memory: {name}")
    turn.actions.append(Action(f"↩ Undo deleting {name!r}", f"/memory undo #{ref}"))


def _str(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise ToolError(f"argument {key!r} must be a string")
    return value


class MemoryTools:
    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._tools: tuple[Tool, ...] = (
            FunctionTool(SAVE, self.save),
            FunctionTool(READ, self.read),
            FunctionTool(DELETE, self.delete),
        )

    def tools_for(self, turn: TurnContext) -> Sequence[Tool]:
        return self._tools

    async def save(self, args: Mapping[str, Any], turn: TurnContext) -> str:
        inbound = turn.inbound
        prov = Provenance("model", inbound.channel, inbound.chat, inbound.msg_id)
        try:
            result = await self._memory.save(
                turn.dirs,
                _str(args, "name"),
                _str(args, "type"),
                _str(args, "description"),
                _str(args, "content"),
                prov,
                turn.now(),
            )
        except MemoryFull as exc:
            if not any(a.command == TIDY.command for a in turn.actions):
                turn.notices.append(FULL_NOTICE)
                turn.actions.append(TIDY)
            raise ToolError(str(exc)) from None
        except MemoryRefused as exc:
            # what was refused is masked wherever this turn is stored (bridge.core.turn)
            turn.refused.extend(v for v in args.values() if isinstance(v, str))
            raise ToolError(str(exc)) from None
        verb = "saved new" if result.created else "updated"
        marked(turn, result.topic.name, result.created, result.removed)
        names = ", ".join(repr(n) for n in result.removed)
        replaced = f" It replaced {names} (the same subject)." if names else ""
        return (
            f"{verb} memory {result.topic.name!r} ({result.topic.type}, "
            f"{len(result.topic.content):,} characters). Index now "
            f"{usage_label(result.used, result.cap)}. It shows in the prompt from the next "
            f"message.{replaced}"
        )

    async def read(self, args: Mapping[str, Any], turn: TurnContext) -> str:
        name = _str(args, "name")
        topic = await self._memory.read(turn.dirs, name, turn.now())
        if topic is None:
            raise ToolError(f"there is no memory named {name!r}; the index lists the names")
        return f"{topic.name} ({topic.type}): {topic.description}\n\n{topic.content}"

    async def delete(self, args: Mapping[str, Any], turn: TurnContext) -> str:
        name = _str(args, "name")
        ref = journal.new_ref()
        topic = await self._memory.delete(turn.dirs, name, "model", turn.now(), ref)
        if topic is None:
            raise ToolError(f"there is no memory named {name!r}; nothing was deleted")
        deleted(turn, topic.name, ref)
        return (
            f"deleted memory {topic.name!r}; the reply tells the person, who can undo it "
            "with one tap"
        )
