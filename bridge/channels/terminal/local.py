"""The terminal's own commands: answered by `roost chat` itself, never sent to the core.

One table: `/help` lists it (`help_text`), Tab completes it (`COMPLETIONS`), the chat
leaves on its quit row's words (`QUIT`) and `attach.local_command` answers the other
rows (a test holds that every row is answered and every answer is a row), so what the
help says and what the chat takes cannot drift apart. `roost chat --help` shows the
same lines.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LocalCommand:
    name: str  # "attach": what Tab completes after "/"
    usage: str  # "/attach PATH"
    summary: str
    aliases: tuple[str, ...] = ()  # other words that do the same


LOCAL = (
    LocalCommand(
        "attach", "/attach PATH", "send a file with your next message (or drop it into the prompt)"
    ),
    LocalCommand(
        "detach", "/detach", "drop the files waiting to be sent (/attach alone lists them)"
    ),
    LocalCommand("quit", "/quit", "leave the chat (/exit, :q and Ctrl-D too)", ("/exit", ":q")),
)
QUIT = frozenset(["/quit", *next(c for c in LOCAL if c.name == "quit").aliases])
COMPLETIONS = tuple((c.name, c.summary) for c in LOCAL)
HELP_ASKED = frozenset({"/help", "/help all"})
HEADING = "roost chat's own commands (answered here, not sent):"


def help_lines(indent: str = "  ") -> list[str]:
    """One line per command: its usage, then what it does."""
    width = max(len(c.usage) for c in LOCAL)
    return [f"{indent}{c.usage:<{width}}  {c.summary}" for c in LOCAL]


def help_text() -> str:
    """What `/help` adds in `roost chat`: the terminal's own commands."""
    return "\n".join([HEADING, *help_lines()])


def asks_help(text: str) -> bool:
    """Whether a line is `/help` or `/help all` (not `/help <command>`)."""
    return " ".join(text.split()).lower() in HELP_ASKED
