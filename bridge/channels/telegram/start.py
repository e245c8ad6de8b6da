"""The `/start` command row: the greeting Telegram sends when a chat opens.

A plain command-table row (no telegram import, safe to load in every
mode): it greets, says what roost does and lists the most used commands
from the table (the rows marked `common`, as the short /help does), with
the "More commands" button for the rest, so it never goes stale and is no
wall of text. Unknown people never reach it: the channel refuses them
before the core.
"""

from __future__ import annotations

from collections.abc import Callable

from bridge.core.builtin_commands import MORE, common_lines
from bridge.core.commands import Command, CommandContext, CommandTable
from bridge.types.messages import Final

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
    async def start(ctx: CommandContext, args: str) -> Final:
        name = ctx.inbound.display_name.strip()
        lines = [GREETING.format(name=f" {name}" if name else ""), "", "Most used:"]
        lines += [line for line in common_lines(table()) if not line.startswith("/start ")]
        return Final("\n".join(lines), "command", actions=(MORE,))

    return Command("start", "/start", "greeting and what roost can do", start)
