"""Chat commands for the rest of the loadout: /profile, /persona, /audience.

Rows of small async functions returning text; none involves the model.
Persona and audience are per chat (the `chat_settings` table), the profile
is per tenant. Every change is audited with names and sizes only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bridge.core.commands import Command, CommandContext, Refused, UsageError
from bridge.loadout.chat_settings import ChatSettings
from bridge.loadout.personas import DEFAULT, Personas
from bridge.loadout.profile import Profile, ProfileError, body_chars
from bridge.screening.screen import refusal, screen
from bridge.types.audit_sink import AuditSink


class ProfileCommands:
    def __init__(self, profile: Profile) -> None:
        self._profile = profile

    def commands(self) -> Iterable[Command]:
        return (
            Command(
                "profile",
                "/profile [set <key> <value> | rm <key>]",
                "one-liners about you that every answer sees",
                self.profile,
            ),
        )

    async def profile(self, ctx: CommandContext, args: str) -> str:
        sub, _, rest = args.strip().partition(" ")
        dirs = ctx.dirs.ensure()
        if not sub:
            try:
                text = self._profile.read(dirs)
            except ProfileError as exc:  # a hand edit left it unreadable: say where
                raise Refused(str(exc)) from None
            lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
            size = f"{body_chars(text):,}/{self._profile.cap:,} characters"
            if not lines:
                return f"Your profile is empty ({size}). /profile set <key> <value> adds a line."
            return f"Your profile ({size}):\n" + "\n".join(lines)
        if sub == "set":
            key, _, value = rest.strip().partition(" ")
            if not key or not value.strip():
                raise UsageError("Give a key and a value.")
            try:
                used = await self._profile.set(dirs, key, value)
            except ProfileError as exc:
                raise Refused(str(exc)) from None
            return f"Profile: {key} set ({used:,}/{self._profile.cap:,} characters)."
        if sub in ("rm", "remove", "delete"):
            if not rest.strip():
                raise UsageError("Which key?")
            try:
                removed = await self._profile.remove(dirs, rest)
            except ProfileError as exc:
                raise Refused(str(exc)) from None
            if removed:
                return f"Profile: {rest.strip()} removed."
            raise Refused(f"Your profile has no line {rest.strip()!r}.")
        raise UsageError(f"Unknown /profile subcommand {sub!r}.")


class PersonaCommands:
    def __init__(self, personas: Personas, chats: ChatSettings, audit: AuditSink) -> None:
        self._personas = personas
        self._chats = chats
        self._audit = audit

    def commands(self) -> Iterable[Command]:
        return (
            Command(
                "persona",
                "/persona [name]",
                "list personas, or switch this chat to one",
                self.persona,
            ),
        )

    async def persona(self, ctx: CommandContext, args: str) -> str:
        i = ctx.inbound
        table = self._personas.all()
        current = self._chats.get(ctx.tenant, i.channel, i.chat, "persona") or DEFAULT
        if current not in table:
            current = DEFAULT
        wanted = args.strip().lower()
        if not wanted:
            lines = [
                f"{'•' if n == current else ' '} {n} — {p.description}"
                for n, p in sorted(table.items())
            ]
            return (
                "Personas (• is this chat's):\n" + "\n".join(lines) + "\n/persona <name> switches."
            )
        if wanted not in table:
            names = ", ".join(sorted(table)) or "none"
            raise Refused(f"There is no persona {wanted!r}. Available: {names}.")
        if wanted == DEFAULT:
            await self._chats.clear(ctx.tenant, i.channel, i.chat, "persona")
        else:
            await self._chats.set(ctx.tenant, i.channel, i.chat, "persona", wanted)
        await self._audit.emit(
            "persona.changed",
            ctx.tenant,
            {"persona": wanted, "previous": current, "channel": i.channel, "chat": i.chat},
        )
        return f"This chat now uses the {wanted} persona: {table[wanted].description}"


class AudienceCommands:
    def __init__(
        self, chats: ChatSettings, audit: AuditSink, defaults: Mapping[str, str], cap: int
    ) -> None:
        self._chats = chats
        self._audit = audit
        self._defaults = dict(defaults)
        self._cap = cap

    def commands(self) -> Iterable[Command]:
        return (
            Command(
                "audience",
                "/audience [<who reads the replies> | clear]",
                "tell the assistant who reads this chat",
                self.audience,
            ),
        )

    async def audience(self, ctx: CommandContext, args: str) -> str:
        i = ctx.inbound
        text = " ".join(args.split())
        if not text:
            mine = self._chats.get(ctx.tenant, i.channel, i.chat, "audience")
            if mine:
                return f"Audience of this chat: {mine}\n/audience clear removes it."
            default = self._defaults.get(i.channel)
            if default:
                return f"Audience (the operator's default for {i.channel}): {default}"
            return "No audience set: replies are written for you. /audience <text> sets one."
        if text.lower() == "clear":
            had = await self._chats.clear(ctx.tenant, i.channel, i.chat, "audience")
            if had:
                await self._audit.emit(
                    "audience.changed",
                    ctx.tenant,
                    {"op": "clear", "channel": i.channel, "chat": i.chat},
                )
            return "Audience cleared." if had else "This chat had no audience set."
        if len(text) > self._cap:
            return (
                f"That is {len(text):,} characters; an audience note holds at most {self._cap:,}."
            )
        reasons = screen(text)
        if reasons:
            return refusal("this audience note", reasons)
        await self._chats.set(ctx.tenant, i.channel, i.chat, "audience", text)
        await self._audit.emit(
            "audience.changed",
            ctx.tenant,
            {"op": "set", "chars": len(text), "channel": i.channel, "chat": i.chat},
        )
        return f"Audience of this chat: {text}"
