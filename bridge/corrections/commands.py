"""`/yes <id> [memory|steering]` and `/no <id>`: confirm or decline a pending offer.

`/yes k3f9` keeps the correction offered under that id in this chat as a
feedback memory, `/yes k3f9 steering` as a steering line (the buttons send
exactly these); with one offer pending the id may be left out; the reply
repeats the words kept, as stored. An offer
lives in the chat it was made in: another chat's or another tenant's `/yes
k3f9` finds nothing. When the memory is full the offer stays pending and the
reply is a tidy-up proposal (`/memory tidy`), with keeping it as steering
instead as a second action.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

from bridge.core.commands import Command, CommandContext, Refused, UsageError
from bridge.corrections.keep import Keeper, Kept
from bridge.corrections.offers import ChatKey, Offer, Offers, literal
from bridge.memory.store import MemoryFull, MemoryRefused, Provenance
from bridge.memory.tidy import HOW_TO_FREE, Consolidator
from bridge.types.messages import Action, Final

KINDS = {"memory": "memory", "steering": "steering", "m": "memory", "s": "steering"}
YES = "/yes [id] [memory | steering]"


def _key(ctx: CommandContext) -> ChatKey:
    return (ctx.tenant, ctx.inbound.channel, ctx.inbound.chat)


def _said(kept: Kept) -> str:
    """The reply to a `/yes`: where it was kept, and the words kept, as stored."""
    where = (
        f"a feedback memory ('{kept.where}')"
        if kept.kind == "memory"
        else "a steering line (STEERING.md)"
    )
    then = " It applies from your next message."
    undo = " /memory undo reverts it." if kept.kind == "memory" else ""
    said = literal(kept.text)
    if kept.replaced is not None:
        return f"Kept as {where}: {said}, replacing {literal(kept.replaced)}.{then}{undo}"
    return f"Kept as {where}: {said}.{then}{undo}"


class CorrectionCommands:
    def __init__(self, offers: Offers, keeper: Keeper, tidy: Consolidator | None) -> None:
        self._offers = offers
        self._keeper = keeper
        self._tidy = tidy

    def commands(self) -> Iterable[Command]:
        return (
            Command("yes", YES, "keep an instruction you were offered to keep", self.yes),
            Command("no", "/no [id]", "decline an offer to keep an instruction", self.no),
        )

    def _find(self, ctx: CommandContext, oid: str) -> Offer | None:
        if oid:
            return self._offers.get(_key(ctx), oid)
        pending = self._offers.pending(_key(ctx))
        return pending[0] if len(pending) == 1 else None

    async def yes(self, ctx: CommandContext, args: str) -> str | Final:
        words = args.split()
        kind = KINDS.get(words[-1].lower(), "") if words else ""
        if kind:
            words = words[:-1]
        if len(words) > 1:
            raise UsageError()
        offer = self._find(ctx, words[0] if words else "")
        if offer is None:
            self._nothing(ctx, words[0] if words else "")
        inbound = ctx.inbound
        prov = Provenance("person", inbound.channel, inbound.chat, inbound.msg_id)
        try:
            kept = await self._keeper.keep(
                ctx.dirs.ensure(), offer.correction, kind or "memory", prov, ctx.now
            )
        except MemoryFull:
            lead = "Not kept yet: memory is full. Tidy it up, then /yes again."
            final = (
                await self._tidy.propose(ctx.dirs, inbound, lead)
                if self._tidy is not None
                else Final(f"{lead}\n\n{HOW_TO_FREE}", "command")
            )
            instead = Action("Keep as steering instead", f"/yes {offer.id} steering")
            return Final(final.text, "command", actions=(*final.actions, instead), failed=True)
        except MemoryRefused as exc:
            self._offers.take(_key(ctx), offer.id)
            raise Refused(str(exc)) from None
        self._offers.take(_key(ctx), offer.id)
        return _said(kept)

    async def no(self, ctx: CommandContext, args: str) -> str:
        offer = self._find(ctx, args.strip().split()[0] if args.strip() else "")
        if offer is None:
            self._nothing(ctx, args.strip())
        self._offers.take(_key(ctx), offer.id)
        return "Not kept. Nothing was stored."

    def _nothing(self, ctx: CommandContext, oid: str) -> NoReturn:
        pending = self._offers.pending(_key(ctx))
        if not oid and len(pending) > 1:
            ids = ", ".join(o.id for o in pending)
            raise Refused(f"Several offers wait in this chat ({ids}); say which: /yes <id>.")
        what = f"offer {oid!r}" if oid else "offer"
        raise Refused(
            f"No {what} is waiting in this chat (offers last an hour). Nothing was stored."
        )
