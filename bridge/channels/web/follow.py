"""Follow a web answer that runs on another instance (instances sharing one home).

A web turn runs on the instance that holds its HTTP request, under the
chat's lease (`bridge.channels.web.leased`); a page reloaded mid-answer
calls `GET /api/chat/attach` on whichever instance the load balancer picks.
When the turn does not run there, `Follow.ended` reads who holds the chat's
lease (the caller's own identity and chat, as `StopRelay.ask` does: nobody
follows another person's chat). Another instance -> the follower keeps its
event stream open and looks again every `POLL_S` until nobody (or this
process) holds the lease: the turn has ended and stored its answer, which
`stored_final` reads back (the last assistant message of the current
conversation, as the local attach's `final`: text, kind; a stopped answer
marked again). The deltas are not relayed (a notify carries no payload
here): the page shows the answer when it ends, then reloads its history.

While it follows, the follower keeps the mark `webview:<chat lease>` alive
(a lease of the shared owner `VIEWERS`, so every instance's follower renews
the same mark and none waits for another's to go; `VIEW_MS`, renewed at
each look, never let go: it lapses `VIEW_MS` after the last look). The
holder's `Viewers` asks `watched` before it stops a turn whose last stream
here went (`[web] detach_grace_s`): a live mark means the person watches
from another instance, and the turn runs on for another grace period.
Costs: nothing per turn; two statements per `POLL_S` per follower on the
following instance, one per grace period where the turn runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final as Constant

from bridge.channels.web.relay import lease_of
from bridge.core.conversations import ConversationArchive
from bridge.core.running import stopped_text
from bridge.core.sessions import SessionKey
from bridge.storage.errors import StorageError
from bridge.storage.leases import Leases
from bridge.types.messages import Final, FinalKind

log = logging.getLogger(__name__)

VIEW: Constant = "webview:"  # + the chat's lease name
VIEWERS: Constant = "web-followers"  # the mark's owner: every instance renews it
VIEW_MS: Constant = 5_000  # a mark its follower did not renew by then is gone
POLL_S: Constant = 0.5  # how often a follower looks whether the turn has ended
KINDS: Constant[dict[str, FinalKind]] = {"stopped": "stopped", "error": "error"}


class Follow:
    """This process's followers of turns that run on other instances, and its answer to
    `watched` for the turns that run here."""

    def __init__(
        self, leases: Leases, owner: str, poll_s: float = POLL_S, view_ms: int = VIEW_MS
    ) -> None:
        self._leases, self.owner = leases, owner
        self._poll_s, self._view_ms = poll_s, view_ms

    async def elsewhere(self, identity: str, chat: str) -> bool:
        """Another instance holds the chat's lease: its turn runs there."""
        holder = await self._leases.holder(lease_of(identity, chat))
        return holder is not None and holder.owner != self.owner

    async def mark(self, identity: str, chat: str) -> None:
        """Mark the chat watched for `VIEW_MS` (`watched`); any follower renews it."""
        await self._leases.acquire(VIEW + lease_of(identity, chat), VIEWERS, self._view_ms)

    async def ended(self, identity: str, chat: str, gone: Callable[[], bool]) -> bool:
        """Wait until no other instance holds the chat's lease (its turn has ended: True)
        or the page is `gone` (False); the chat's mark renewed at each look."""
        name = lease_of(identity, chat)
        while True:
            holder = await self._leases.holder(name)
            if holder is None or holder.owner == self.owner:
                return True
            await asyncio.sleep(self._poll_s)
            if gone():
                return False
            await self.mark(identity, chat)

    async def watched(self, identity: str, chat: str) -> bool:
        """Someone follows the chat's turn from another instance (a live mark)."""
        name = lease_of(identity, chat)
        try:
            mark = await self._leases.holder(VIEW + name)
        except StorageError as exc:  # nobody can follow without the database
            log.warning("web: whether %s is followed elsewhere not read: %s", name, exc)
            return False
        if mark is not None:
            log.info("web: turn of %s kept: followed from another instance", name)
        return mark is not None


async def stored_final(archive: ConversationArchive, key: SessionKey, now: float) -> Final:
    """The answer the chat's last turn stored, as a `final` (silent: none stored)."""
    page = await archive.page(key, None, None, 1, now)
    last = page.messages[-1] if page is not None and page.messages else None
    if last is None or last["role"] != "assistant" or last["status"] == "summary":
        return Final("", kind="silent")
    kind = KINDS.get(last["status"], "answer")
    return Final(stopped_text(last["text"]) if kind == "stopped" else last["text"], kind=kind)
