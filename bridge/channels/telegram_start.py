"""The `/start` command row: the greeting Telegram sends when a chat opens.

A plain command-table row (no telegram import, safe to load in every
mode): it greets, says what roost does and lists the other commands from
the table, so it never goes stale. Unknown people never reach it: the
channel refuses them before the core.
"""

from __future__ import annotations

from collections.abc import Callable

from bridge.core.commands import Command, CommandContext, CommandTable

GREETING = (
    "Hi{name}! I'm roost, a personal assistant that keeps a loadout for you.\n\n"
    "- Just write to me: I answer with the model your operator configured, and long "
    "answers appear as I write them.\n"
    "- I remember what matters to you across conversations, learn how you like "
    "answers, and can run small personal tools you save.\n"
    "- In groups, mention me or reply to me; each person there has their own "
    "conversation with me."
)


def start_command(table: Callable[[], CommandTable]) -> Command:
    async def start(ctx: CommandContext, args: str) -> str:
        name = ctx.inbound.display_name.strip()
        lines = [GREETING.format(name=f" {name}" if name else ""), "", "Commands:"]
        lines += [f"/{c.name} - {c.summary}" for c in table() if c.name != "start"]
        return "\n".join(lines)

    return Command("start", "/start", "greeting and what roost can do", start)
