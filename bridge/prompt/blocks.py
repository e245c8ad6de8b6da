"""The nine prompt blocks: an ordered table of pure functions over one `Snapshot`.

Stable blocks first, so the provider's prompt cache covers as much as
possible: base (+ steering), profile, memory index, vault names, persona,
audience, skills, style bullets, personal tools. `make_blocks` sets each
block's character budget from the caps; `bridge.prompt.render` applies budgets and
announces cuts inside the block.
"""

from __future__ import annotations

from bridge.core.config_sections import LoadoutSettings
from bridge.memory.files import usage_chars, usage_label
from bridge.prompt.render import Block
from bridge.prompt.snapshot import Snapshot

MAX_TOOLS = 15


def base_block(s: Snapshot) -> str:
    parts = [s.base]
    if s.operator_steering:
        parts.append("## Operator instructions (always follow)\n" + s.operator_steering)
    if s.tenant_steering:
        parts.append("## This person's standing instructions (always follow)\n" + s.tenant_steering)
    return "\n\n".join(parts)


def profile_block(s: Snapshot) -> str:
    if not s.profile:
        return ""
    return "## About this person (their profile)\n" + "\n".join(s.profile)


def memory_block(s: Snapshot) -> str:
    label = usage_label(usage_chars(s.memory), s.memory_cap)
    entries = "\n".join(s.memory) if s.memory else "(nothing saved yet)"
    return (
        f"## Memory {label}\n"
        "What you saved about this person, one line per topic; memory_read(name) shows a "
        "topic in full. Save with memory_save only what the person stated or confirmed — "
        "never speculation, never secrets. Update an existing name rather than adding a "
        "near-duplicate; memory_delete what is wrong or stale. A save shows from the next "
        f"message on.\n{entries}"
    )


def vault_block(s: Snapshot) -> str:
    if not s.vault_names:
        return ""
    return (
        "## Vault\nSecrets stored for this person (names only; you never see the values, "
        "and tools that declare a secret receive it when they run): " + ", ".join(s.vault_names)
    )


def persona_block(s: Snapshot) -> str:
    return s.persona_system


def audience_block(s: Snapshot) -> str:
    if not s.audience:
        return ""
    return f"## Audience\nIn this chat your replies are read by: {s.audience}\nWrite for them."


def skills_block(s: Snapshot) -> str:
    if not s.skills:
        return ""
    rows = sorted(s.skills, key=lambda r: (-r.grade, r.name))
    lines = [
        f"- {name} — {desc} (grade {grade:.1f})" if desc else f"- {name} (grade {grade:.1f})"
        for name, desc, grade in rows
    ]
    return "## Skills that worked well for this person\n" + "\n".join(lines)


def style_block(s: Snapshot) -> str:
    if not s.bullets:
        return ""
    lines = [f"- {b.text}" for b in s.bullets]
    return "## How this person likes answers (learned from their reactions)\n" + "\n".join(lines)


def tools_block(s: Snapshot) -> str:
    if not s.tools:
        return ""
    rows = sorted(s.tools, key=lambda r: (-r.since, r.name))
    lines = []
    for name, desc, unused, _ in rows[:MAX_TOOLS]:
        flag = f" (unused {unused}d)" if unused is not None else ""
        lines.append(f"- `me.{name}` — {desc}{flag}" if desc else f"- `me.{name}`{flag}")
    more = len(rows) - MAX_TOOLS
    if more > 0:
        lines.append(f"(and {more} more; /tools lists them all)")
    return "## Your personal tools (always available)\n" + "\n".join(lines)


def make_blocks(caps: LoadoutSettings) -> tuple[Block[Snapshot], ...]:
    return (
        Block(
            "base",
            4_000 + 2 * max(caps.steering_file_chars, 45_000),
            base_block,
            reads=("base", "operator_steering", "tenant_steering"),
        ),
        Block("profile", caps.profile_chars + 200, profile_block, reads=("profile",)),
        Block("memory", caps.memory_chars + 800, memory_block, reads=("memory", "memory_cap")),
        Block("vault", 2_000, vault_block, reads=("vault_names",)),
        Block("persona", 8_000, persona_block, reads=("persona_system",)),
        Block("audience", caps.audience_chars + 200, audience_block, reads=("audience",)),
        # grades move every turn
        Block("skills", 3_000, skills_block, stable=False, reads=("skills",)),
        # shadow bullets per message
        Block("style", 2_500, style_block, stable=False, reads=("bullets",)),
        # "(unused Nd)" moves daily
        Block("tools", 2_500, tools_block, stable=False, reads=("tools",)),
    )
