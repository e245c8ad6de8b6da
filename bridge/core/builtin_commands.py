"""The commands every roost has: /help, /reset, /whoami, /status, /unpair.

They read the command table, the session store and the chat's model line;
/unpair lets a paired person end their own binding (audited
`pairing.revoked` by user): from their next message on they are a stranger.
Nothing here talks to a model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from bridge.core.commands import Command, CommandContext, CommandTable, UsageError
from bridge.core.pairing import PairingStore
from bridge.core.sessions import SessionStore
from bridge.types.audit_sink import AuditSink

NOT_PAIRED = (
    "You are not paired: your access comes from the operator's configuration. "
    "Ask them to remove your id if you want to leave."
)
UNPAIRED = (
    "Unpaired: this {channel} account is no longer bound to roost. Your data stays with the "
    "operator; to come back, ask them for a new pairing code."
)


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
        budget_note: Callable[[str], str] | None = None,
        channels: Callable[[], Sequence[str]] = tuple,
    ) -> None:
        self._budget_note = budget_note  # a tenant's "budget nearly used up" line, or ''
        self._table = table
        self._channels = channels  # one line per chat channel that says how it is
        self._sessions = sessions
        self._model = model_line  # this chat's model: name, provider and model id
        self._pairing, self._audit = pairing, audit

    def commands(self) -> Iterable[Command]:
        return (
            Command("help", "/help [command]", "list commands, or explain one", self.help),
            Command(
                "reset",
                "/reset",
                "start a fresh conversation (memory, tools and style stay)",
                self.reset,
                aliases=("new",),
            ),
            Command("whoami", "/whoami", "who you are to roost and which tenant", self.whoami),
            Command(
                "status", "/status", "tenant, model backend, session size and summary", self.status
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
        tenant = self._pairing.revoke(channel, identity)
        if tenant is None:
            return NOT_PAIRED
        if self._audit is not None:
            details = {"channel": channel, "identity": identity, "by": "user"}
            await self._audit.emit("pairing.revoked", tenant, details)
        return UNPAIRED.format(channel=channel.capitalize())

    async def help(self, ctx: CommandContext, args: str) -> str:
        table = self._table()
        if args:
            cmd = table.get(args.lstrip("/").split()[0])
            if cmd is None:
                raise UsageError(f"There is no command /{args.lstrip('/')}.")
            aliases = f"\nAliases: {', '.join('/' + a for a in cmd.aliases)}" if cmd.aliases else ""
            return f"{cmd.usage}\n{cmd.summary}{aliases}"
        lines = ["Commands:"]
        lines += [f"{cmd.usage} — {cmd.summary}" for cmd in table]
        lines.append("Anything else you type goes to the assistant.")
        return "\n".join(lines)

    async def reset(self, ctx: CommandContext, args: str) -> str:
        self._sessions.reset(ctx.session, ctx.now)  # its summary too
        return "Started a fresh conversation. Your memory, profile, tools and style are kept."

    async def whoami(self, ctx: CommandContext, args: str) -> str:
        who = ctx.inbound.display_name or ctx.inbound.identity
        return (
            f"You are {who} (id {ctx.inbound.identity}) on {ctx.inbound.channel}, "
            f"chat {ctx.inbound.chat}.\nTenant: {ctx.tenant}"
        )

    async def status(self, ctx: CommandContext, args: str) -> str:
        s = self._sessions.load(ctx.session, ctx.now)
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
        note = self._budget_note(ctx.tenant) if self._budget_note is not None else ""
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
