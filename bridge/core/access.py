"""Who gets in: an identity's tenant, or what to say to a stranger.

`Access.admit` decides for every inbound message, before anything else in
the core runs, in this order: a command addressed to another bot
(`/x@other_bot`, checked against `Inbound.bot_name`) is silently not ours;
`/pair CODE` is redeemed here (private chats only, with its lockout), so
unknown people can pair; a known identity gets its tenant; anyone else gets
one refusal, ever (remembered in the database), and silence after that. No
platform import: channels hand in an `Inbound` and send back the `Final`.
Audit events carry ids only, never the code. Refusals and failed pairings
go through `StrangerAudit`: one record per identity per hour with a count,
a cap per hour in all, so strangers cannot grow the chain without bound.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from bridge.core.commands import parse_command
from bridge.core.pairing import MAX_FAILURES, PairingStore
from bridge.core.strangers import StrangerAudit, StrangerLimits
from bridge.core.tenants import TenantResolver
from bridge.types.audit_sink import AuditSink
from bridge.types.messages import Final, FinalKind, Inbound

log = logging.getLogger(__name__)

REFUSAL_PRIVATE = (
    "Sorry, I don't know you: this assistant is private.\n"
    "To get access, ask its operator for a pairing code (they run `roost pair <tenant>`) "
    "and send it here as /pair CODE. Your {channel} user id is {user_id}."
)
REFUSAL_GROUP = (
    "Sorry, I don't know you: this assistant is private. To get access, ask its operator "
    "for a pairing code and send /pair CODE to me in a private chat."
)
PAIR_USAGE = "Usage: /pair CODE (the 8-character code your roost operator gave you)."
PAIR_PRIVATE = "For safety, send /pair CODE to me in a private chat, not in a group."
ALREADY = "You already have access; no code needed."
SILENT = Final("", "silent")
BARRED = (
    "This person's data is being deleted (`roost forget` has not finished), so nothing is "
    "served. The operator finishes it by running `roost forget --tenant <tenant> --yes` again."
)


def _said(text: str | None, kind: FinalKind) -> Final:
    return SILENT if text is None else Final(text, kind)


class Access:
    def __init__(
        self,
        resolver: TenantResolver,
        pairing: PairingStore,
        audit: AuditSink,
        limits: StrangerLimits | None = None,
        titles: Mapping[str, str] | None = None,
    ) -> None:
        self._resolver, self._pairing, self._audit = resolver, pairing, audit
        self._titles = dict(titles or {})  # channel -> its platform's title ("WhatsApp")
        self._strangers = StrangerAudit(audit, pairing.clock, limits)

    async def flush(self) -> None:
        """Write the aggregate of stranger events only counted so far (at stop)."""
        await self._strangers.flush()

    async def admit(self, inbound: Inbound) -> str | Final:
        """The tenant to serve, or the whole reply (possibly `silent`) when none."""
        parsed = parse_command(inbound.text.strip()) if inbound.has_text else None
        if parsed is not None and parsed.for_another_bot(inbound.bot_name):
            log.debug("%s: a command for another bot ignored", inbound.channel)
            return SILENT
        if parsed is not None and parsed.name == "pair":
            return _said(await self._pair(inbound, parsed.args), "command")
        tenant = await self._match(inbound)
        if tenant is not None and self._resolver.barred(tenant):
            log.warning("%s: a message for a tenant being forgotten refused", inbound.channel)
            return Final(BARRED, "refusal")
        if tenant is not None:
            await self._pairing.stamp(inbound.channel, inbound.identity, tenant)  # access list
            return tenant
        return _said(await self._refusal(inbound), "refusal")

    async def _match(self, inbound: Inbound) -> str | None:
        """The resolver's tenant, with this identity's binding read from the database
        first when it may count (no other rule matched, or the mirror holds one): a
        binding another process made or removed counts from this message on."""
        tenant = self._resolver.match(inbound)
        if tenant is None or self._pairing.mirrored(inbound.channel, inbound.identity):
            await self._pairing.seen(inbound.channel, inbound.identity)  # stamps last_seen
            tenant = self._resolver.match(inbound)
        return tenant

    async def _pair(self, inbound: Inbound, code: str) -> str | None:
        """The reply to `/pair CODE`; None when a locked-out identity keeps trying."""
        if not inbound.is_private:
            return PAIR_PRIVATE
        if not code:
            return PAIR_USAGE
        channel, identity = inbound.channel, inbound.identity
        paired = await self._pairing.bound_tenant(channel, identity)  # the mirror follows
        if self._resolver.resolve(inbound) is not None and paired is None:
            return ALREADY
        result = await self._pairing.redeem(channel, identity, code)
        if result.outcome == "bound":
            details = {"channel": channel, "identity": identity}
            await self._audit.emit("pairing.used", result.tenant, details)
            return (
                f"Paired: you now talk to roost as **{result.tenant}**. Say hello, or send /help."
            )
        locked = result.outcome == "locked"
        await self._strangers.record("pairing.failed", channel, identity, {"locked": locked})
        if not locked:
            left = result.failures_left
            return (
                f"That code is not valid (wrong, used or expired). {left} more "
                f"attempt{'s' if left != 1 else ''} before pairing locks for an hour."
            )
        if result.just_locked:
            return f"{MAX_FAILURES} wrong codes: pairing is locked for this account for an hour."
        log.info("%s: pairing attempt from a locked-out identity ignored", channel)
        return None

    async def _refusal(self, inbound: Inbound) -> str | None:
        """The refusal for an unknown identity, the first time only."""
        channel, identity = inbound.channel, inbound.identity
        if not await self._pairing.should_refuse_loudly(channel, identity):
            log.debug("%s: message from an unknown identity dropped (already told)", channel)
            return None
        await self._strangers.record("access.refused", channel, identity, {})
        if inbound.is_private:
            title = self._titles.get(channel) or channel.capitalize()
            return REFUSAL_PRIVATE.format(channel=title, user_id=identity)
        return REFUSAL_GROUP
