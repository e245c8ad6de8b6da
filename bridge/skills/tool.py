"""The model's `skill_propose(name, description, body)` tool (a ToolSource).

A proposal writes nothing: the person sees it at the end of the reply (a
notice: the whole new skill, or a unified diff of an edit, and whether the
skill keeps its grade) and keeps it with `/skill save <name>`. Refusals (a
bad name, an oversize body, a secret, an injection marker, too many pending
proposals) go back to the model as tool errors that say what to change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bridge.skills.forge import SkillForge, parts
from bridge.skills.proposals import (
    MAX_BODY,
    MAX_DESCRIPTION,
    SMALL_EDIT,
    TTL_S,
    Proposal,
    ProposalRefused,
    diff,
    similarity,
)
from bridge.types.backend import ToolSchema
from bridge.types.tools import FunctionTool, Tool, ToolError, TurnContext

PROPOSE = ToolSchema(
    "skill_propose",
    "Propose a new skill (a short reusable procedure, kept as skills/<name>.md) or an edit "
    "of an existing one (same name). Nothing is saved: the person sees the proposal as a "
    "diff after your reply and keeps it with /skill save <name>. Never claim it is saved. "
    "No secrets, no instructions about the assistant's rules.",
    {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "description": "file name: a-z, 0-9, '_' or '-', at most 64 characters",
            },
            "description": {
                "type": "string",
                "description": f"one line: what the skill does, at most {MAX_DESCRIPTION}",
            },
            "body": {
                "type": "string",
                "description": f"the procedure (markdown steps), at most {MAX_BODY:,} characters",
            },
        },
        "required": ["name", "description", "body"],
        "additionalProperties": False,
    },
)


def grade_line(proposal: Proposal) -> str:
    """What saving does to the grade: kept after a small edit, fresh otherwise."""
    if proposal.base is None:
        return "a new skill: it starts at the initial grade"
    pct = int(similarity(parts(proposal.base)[1], proposal.body) * 100)
    if pct >= SMALL_EDIT * 100:
        return f"a small edit ({pct}% similar): it keeps its grade"
    return f"a rewrite ({pct}% similar, under {int(SMALL_EDIT * 100)}%): its grade starts fresh"


def notice(proposal: Proposal) -> str:
    """The lines the person sees after the reply."""
    name = proposal.name
    head = "New skill proposed" if proposal.created else "Skill edit proposed"
    return "\n".join(
        (
            f"📝 {head}: {name} — {grade_line(proposal)}.",
            diff(name, proposal.base, proposal.text),
            f"Nothing is written until you send /skill save {name} "
            f"(within {TTL_S // 3600} h in this chat).",
        )
    )


def _str(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise ToolError(f"argument {key!r} must be a string")
    return value


class SkillTools:
    def __init__(self, forge: SkillForge) -> None:
        self._forge = forge
        self._tools: tuple[Tool, ...] = (FunctionTool(PROPOSE, self.propose),)

    def tools_for(self, turn: TurnContext) -> Sequence[Tool]:
        return self._tools

    async def propose(self, args: Mapping[str, Any], turn: TurnContext) -> str:
        inbound = turn.inbound
        key = (turn.tenant, inbound.channel, inbound.chat)
        try:
            proposal = await self._forge.propose(
                turn.dirs,
                key,
                _str(args, "name"),
                _str(args, "description"),
                _str(args, "body"),
                turn.now(),
            )
        except ProposalRefused as exc:
            turn.refused.extend(
                v for v in args.values() if isinstance(v, str)
            )  # masked when stored
            raise ToolError(f"Not proposed: {exc}. Nothing was shown or written.") from None
        turn.notices.append(notice(proposal))
        return (
            f"Proposed skill {proposal.name!r} ({grade_line(proposal)}). The person sees the "
            f"{'new skill' if proposal.created else 'diff'} below your reply; nothing is saved "
            f"until they send /skill save {proposal.name}. Do not say it is saved."
        )
