"""The command table: slash commands as rows of small async functions.

A command is (name, usage, summary, handler); the handler gets a
`CommandContext` and the argument text and returns the reply text (or a
`Final` when the reply carries files, as `/export` does). `/help`,
the Telegram menu and the web page's hints are all generated from the table.
A handler raises `UsageError` to answer with its usage line, and `Refused`
when it cannot do what it was asked (a memory, draft or proposal that is
not there): its message is the reply, and `roost send` exits 1. A row marked
`common` is one of the few a short `/help` lists; one marked `immediate`
runs at once, beside a running answer of the chat, instead of waiting its
turn (`/stop`). A command
addressed to another bot (`/whoami@other_bot`) is not ours: a channel that
knows its bot's name sets `Inbound.bot_name`, and the core's access drops
such a message before pairing or refusal (`ParsedCommand.for_another_bot`) -
no reply, nothing runs.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from bridge.core.sessions import SessionKey
from bridge.types.messages import Final, Inbound
from bridge.types.tenant_dirs import TenantDirs

COMMAND_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
# What a scheduled job's text may run when it is a command: these only read. Any other
# command needs the person to send it: a job can be made by the model (`schedule_create`,
# from a prompt a file in the workspace injected), and a job's run speaks as the person,
# so "/tool save NAME yes HASH" in a job gave a tool vault secrets and network hosts
# without the person's consent; "/yes ID steering" would keep an instruction.
SCHEDULED_MAY_RUN = frozenset(
    {"help", "start", "whoami", "status", "skills", "tools", "jobs", "recall", "usage"}
)
NOT_SCHEDULED = "🔒 /{name} runs only when you send it yourself, never from a scheduled job."
_PARSE = re.compile(r"^/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]{1,64}))?(?:\s+(.*))?$", re.DOTALL)


class UsageError(Exception):
    """The arguments do not fit; the reply is the command's usage (+ the reason)."""


class Refused(Exception):
    """The command could not do what it was asked; the reply is the message, marked
    failed (`Final.failed`: `roost send` exits 1)."""


@dataclass(frozen=True, slots=True)
class CommandContext:
    inbound: Inbound
    tenant: str
    dirs: TenantDirs
    session: SessionKey
    now: float


Handler = Callable[[CommandContext, str], Awaitable[str | Final]]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    usage: str
    summary: str
    handler: Handler
    aliases: tuple[str, ...] = ()
    common: bool = False  # listed by the short /help (and /start)
    immediate: bool = False  # runs beside the chat's running answer, not after it
    examples: tuple[str, ...] = ()  # whole commands `/help <name>` shows (never the list)

    def __post_init__(self) -> None:
        for name in (self.name, *self.aliases):
            if not COMMAND_NAME.fullmatch(name):
                raise ValueError(f"bad command name {name!r}")


class CommandSet(Protocol):
    """Anything that contributes rows to the table (one per loadout part)."""

    def commands(self) -> Iterable[Command]: ...


class CommandTable:
    """Name -> command, aliases included; refuses duplicate names."""

    def __init__(self, commands: Iterable[Command]) -> None:
        self._rows: list[Command] = []
        self._by_name: dict[str, Command] = {}
        for cmd in commands:
            self.add(cmd)

    def add(self, cmd: Command) -> None:
        for name in (cmd.name, *cmd.aliases):
            if name in self._by_name:
                raise ValueError(f"command /{name} is defined twice")
            self._by_name[name] = cmd
        self._rows.append(cmd)

    def get(self, name: str) -> Command | None:
        return self._by_name.get(name.lower())

    def __iter__(self) -> Iterator[Command]:
        return iter(self._rows)

    def suggest(self, name: str) -> str | None:
        close = difflib.get_close_matches(name.lower(), list(self._by_name), n=1, cutoff=0.6)
        return close[0] if close else None


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    name: str
    args: str
    addressee: str | None  # the @botname suffix, if any

    def for_another_bot(self, me: str | None) -> bool:
        """True when `/cmd@name` names a bot other than `me` (Telegram usernames
        compare case-insensitively). A channel that names no bot (`me` empty)
        takes every command as its own."""
        if not me or self.addressee is None:
            return False
        return self.addressee.casefold() != me.casefold()


def parse_command(text: str) -> ParsedCommand | None:
    """`/name[@bot] args` -> ParsedCommand; anything else -> None."""
    if not text.startswith("/"):
        return None
    match = _PARSE.match(text.strip())
    if match is None:
        return None
    name, bot, args = match.groups()
    return ParsedCommand(name.lower(), (args or "").strip(), bot)
