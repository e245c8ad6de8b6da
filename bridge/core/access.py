"""Who gets in, as text to send: `/pair CODE` and the one-time refusal.

No telegram import: the gate takes our `Inbound`, talks to the pairing
store and the audit sink, and returns what to say (or None: say nothing).
Audit events carry ids only, never the code. Refusals and failed pairings
go through `StrangerAudit`: one record per identity per hour with a count,
a cap per hour in all, so strangers cannot grow the chain without bound.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from bridge.core.pairing import MAX_FAILURES, PairingStore
from bridge.core.strangers import StrangerAudit, StrangerLimits
from bridge.types.audit_sink import AuditSink
from bridge.types.messages import Inbound

log = logging.getLogger(__name__)

REFUSAL_PRIVATE = (
    "Sorry, I don't know you: this assistant is private.\n"
    "To get access, ask its operator for a pairing code (they run `roost pair <tenant>`) "
    "and send it here as /pair CODE. Your Telegram user id is {user_id}."
)
REFUSAL_GROUP = (
    "Sorry, I don't know you: this assistant is private. To get access, ask its operator "
    "for a pairing code and send /pair CODE to me in a private chat."
)
PAIR_USAGE = "Usage: /pair CODE (the 8-character code your roost operator gave you)."
PAIR_PRIVATE = "For safety, send /pair CODE to me in a private chat, not in a group."
ALREADY = "You already have access; no code needed."


class AccessGate:
    def __init__(
        self,
        channel: str,
        resolve: Callable[[Inbound], str | None],
        pairing: PairingStore,
        audit: AuditSink,
        limits: StrangerLimits | None = None,
    ) -> None:
        self._channel, self._resolve = channel, resolve
        self._pairing, self._audit = pairing, audit
        self._strangers = StrangerAudit(audit, pairing.clock, limits)

    async def flush(self) -> None:
        """Write the aggregate of stranger events only counted so far (at stop)."""
        await self._strangers.flush()

    async def pair(self, inbound: Inbound, code: str) -> str | None:
        """The reply to `/pair CODE`; None when a locked-out identity keeps trying."""
        if not inbound.is_private:
            return PAIR_PRIVATE
        if not code:
            return PAIR_USAGE
        paired = self._pairing.bound_tenant(self._channel, inbound.identity)
        if self._resolve(inbound) is not None and paired is None:
            return ALREADY
        result = self._pairing.redeem(self._channel, inbound.identity, code)
        details = {"channel": self._channel, "identity": inbound.identity}
        if result.outcome == "bound":
            await self._audit.emit("pairing.used", result.tenant, details)
            tenant = result.tenant
            return f"Paired: you now talk to roost as **{tenant}**. Say hello, or send /help."
        locked = result.outcome == "locked"
        await self._strangers.record(
            "pairing.failed", self._channel, inbound.identity, {"locked": locked}
        )
        if not locked:
            left = result.failures_left
            return (
                f"That code is not valid (wrong, used or expired). {left} more "
                f"attempt{'s' if left != 1 else ''} before pairing locks for an hour."
            )
        if result.just_locked:
            return f"{MAX_FAILURES} wrong codes: pairing is locked for this account for an hour."
        log.info("%s: pairing attempt from a locked-out identity ignored", self._channel)
        return None

    async def refusal(self, inbound: Inbound) -> str | None:
        """The refusal for an unknown identity, the first time only."""
        if not self._pairing.should_refuse_loudly(self._channel, inbound.identity):
            log.debug("%s: message from an unknown identity dropped (already told)", self._channel)
            return None
        await self._strangers.record("access.refused", self._channel, inbound.identity, {})
        if inbound.is_private:
            return REFUSAL_PRIVATE.format(user_id=inbound.identity)
        return REFUSAL_GROUP
