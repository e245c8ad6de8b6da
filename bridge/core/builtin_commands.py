"""The commands every roost has: /help, /reset, /stop, /whoami, /status, /unpair.

They read the command table, the session store and the chat's model line;
/help lists the rows marked `common` with a "More commands" button (an
in-place action: `/help all`, the whole table); /stop ends the chat's
running answer (`RunningTurns.stop`, as the web page's Stop), keeping what
was written marked "[stopped]", and runs at once (`immediate`) rather than
after that answer;
/unpair lets a paired person end their own binding (audited
`pairing.revoked` by user): from their next message on they are a stranger.
Nothing here talks to a model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence

from bridge.core.commands import Command, CommandContext, CommandTable, UsageError
from bridge.core.pairing import PairingStore
from bridge.core.running import RunningTurns
from bridge.core.sessions import SessionKey, SessionStore
from bridge.types.audit_sink import AuditSink
from bridge.types.messages import Action, Final

NOT_PAIRED = (
    "You are not paired: your access comes from the operator's configuration. "
    "Ask them to remove your id if you want to leave."
)
MORE = Action("More commands", "/help all", in_place=True)
NOTHING_RUNS = "Nothing to stop: no answer is being written in this chat."
UNPAIRED = (
    "Unpaired: this {channel} account is no longer bound to roost. Your data stays with the "
    "operator; to come back, ask them for a new pairing code."
)


def common_lines(table: CommandTable) -> list[str]:
    """The most used commands, one short line each (the rows marked `common`)."""
    return [f"/{c.name} — {c.summary}" for c in table if c.common]


def full_list(table: CommandTable) -> str:
    lines = ["Commands:"]
    lines += [f"{cmd.usage} — {cmd.summary}" for cmd in table]
    lines.append("Anything else you type goes to the assistant.")
    return "\n".join(lines)


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


class CoreCommands:
    def __init__(
        self,
        table: Callable[[], CommandTable],
        sessions: SessionStore,
        model_line: Callable[[CommandContext], str],
        pairing: PairingStore | None = None,
        audit: AuditSink | None = None,
        budget_note: Callable[[str], Awaitable[str]] | None = None,
        channels: Callable[[], Sequence[str]] = tuple,
        running: RunningTurns[SessionKey] | None = None,
    ) -> None:
        self._running = running  # the chat's running answer, for /stop
        self._budget_note = budget_note  # a tenant's "budget nearly used up" line, or ''
        self._table = table
        self._channels = channels  # one line per chat channel that says how it is
        self._sessions = sessions
        self._model = model_line  # this chat's model: name, provider and model id
        self._pairing, self._audit = pairing, audit

    def commands(self) -> Iterable[Command]:
        return (
            Command(
                "help",
                "/help [all | command]",
                "the most used commands; all of them; or explain one",
                self.help,
                common=True,
            ),
            Command(
                "reset",
                "/reset",
                "start a fresh conversation (memory, tools and style stay)",
                self.reset,
                aliases=("new",),
                common=True,
            ),
            *(
                (
                    Command(
                        "stop",
                        "/stop",
                        "stop the answer being written (what it wrote so far stays)",
                        self.stop,
                        common=True,
                        immediate=True,
                    ),
                )
                if self._running is not None
                else ()
            ),
            Command("whoami", "/whoami", "who you are to roost and which tenant", self.whoami),
            Command(
                "status",
                "/status",
                "tenant, model backend, session size and summary",
                self.status,
                common=True,
            ),
            *(
                (Command("unpair", "/unpair", "end your own pairing with roost", self.unpair),)
                if self._pairing is not None
                else ()
            ),
        )

    async def unpair(self, ctx: CommandContext, args: str) -> str:
        assert self._pairing is not None
        channel, identity = ctx.inbound.channel, ctx.inbound.identity
        tenant = await self._pairing.revoke(channel, identity)
        if tenant is None:
            return NOT_PAIRED
        if self._audit is not None:
            details = {"channel": channel, "identity": identity, "by": "user"}
            await self._audit.emit("pairing.revoked", tenant, details)
        return UNPAIRED.format(channel=channel.capitalize())

    async def help(self, ctx: CommandContext, args: str) -> str | Final:
        table = self._table()
        if args.strip().lower() == "all":
            return full_list(table)
        if args:
            cmd = table.get(args.lstrip("/").split()[0])
            if cmd is None:
                raise UsageError(f"There is no command /{args.lstrip('/')}.")
            aliases = f"\nAliases: {', '.join('/' + a for a in cmd.aliases)}" if cmd.aliases else ""
            shown = "".join(f"\n  {e}" for e in cmd.examples)
            examples = f"\nFor example:{shown}" if shown else ""
            return f"{cmd.usage}\n{cmd.summary}{examples}{aliases}"
        lines = ["Most used:", *common_lines(table)]
        lines.append("Anything else you type goes to the assistant. /help all lists every command.")
        return Final("\n".join(lines), "command", actions=(MORE,))

    async def stop(self, ctx: CommandContext, args: str) -> str | Final:
        """Stop the chat's running answer; silent when it did (the answer shows it)."""
        if self._running is None or not await self._running.stop(ctx.session):
            return NOTHING_RUNS
        return Final("", "silent")

    async def reset(self, ctx: CommandContext, args: str) -> str:
        await self._sessions.reset(ctx.session, ctx.now)  # its summary too
        return "Started a fresh conversation. Your memory, profile, tools and style are kept."

    async def whoami(self, ctx: CommandContext, args: str) -> str:
        who = ctx.inbound.display_name or ctx.inbound.identity
        return (
            f"You are {who} (id {ctx.inbound.identity}) on {ctx.inbound.channel}, "
            f"chat {ctx.inbound.chat}.\nTenant: {ctx.tenant}"
        )

    async def status(self, ctx: CommandContext, args: str) -> str:
        s = await self._sessions.load(ctx.session, ctx.now)
        if s.turns == 0 and not s.history:
            session = "Session: new (no turns yet)"
        else:
            turns = f"{s.turns} turn{'' if s.turns == 1 else 's'}"
            session = (
                f"Session: {turns}, {s.kept} kept, "
                f"{s.chars:,}/{self._sessions.budget_chars:,} characters, "
                f"{s.dropped} oldest turns dropped; started {_ago(ctx.now - s.started_at)} ago, "
                f"last message {_ago(ctx.now - s.updated_at)} ago"
            )
            if s.summary:
                session += (
                    f"\nSummary: {s.summarised} earlier turn{'' if s.summarised == 1 else 's'} "
                    f"in {len(s.summary):,} characters (the model reads it before the rest)"
                )
        idle_days = self._sessions.idle_s / 86400
        note = await self._budget_note(ctx.tenant) if self._budget_note is not None else ""
        return "\n".join(
            (
                f"Tenant: {ctx.tenant}",
                f"Channel: {ctx.inbound.channel}, chat {ctx.inbound.chat}",
                f"Model: {self._model(ctx)}",
                *self._channels(),
                session,
                f"A conversation idle for {idle_days:g} days starts fresh.",
                *((note,) if note else ()),
            )
        )
