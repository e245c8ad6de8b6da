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

While it follows, the follower keeps the mark `webview:<chat lease>` (a
lease owned by this process, `VIEW_MS`, renewed at each look; let go when
its last follower here ends). The holder's `Viewers` asks `watched` before
it stops a turn whose last stream here went (`[web] detach_grace_s`): a
live mark means the person watches from another instance, and the turn
runs on for another grace period. Costs: nothing per turn; two statements
per `POLL_S` per followed chat on the following instance, one per grace
period where the turn runs. A third instance following the same chat
while the mark is another's keeps it when that one goes (at its next look).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
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
        self._here: dict[str, int] = {}  # chat lease -> followers of it in this process

    async def elsewhere(self, identity: str, chat: str) -> bool:
        """Another instance holds the chat's lease: its turn runs there."""
        holder = await self._leases.holder(lease_of(identity, chat))
        return holder is not None and holder.owner != self.owner

    @contextlib.asynccontextmanager
    async def following(self, identity: str, chat: str) -> AsyncIterator[None]:
        """While inside, the chat counts as watched from here (`watched`): marked on
        entering (StorageError: the database away), renewed by `ended`."""
        name = lease_of(identity, chat)
        self._here[name] = self._here.get(name, 0) + 1
        try:
            await self._mark(name)
            yield
        finally:
            left = self._here.pop(name) - 1
            if left:
                self._here[name] = left
            else:
                with contextlib.suppress(StorageError):  # else it expires in VIEW_MS
                    await self._leases.release(VIEW + name, self.owner)

    async def ended(self, identity: str, chat: str, gone: Callable[[], bool]) -> bool:
        """Wait until no other instance holds the chat's lease (its turn has ended: True)
        or the page is `gone` (False); the viewer mark renewed meanwhile. Inside
        `following`."""
        name = lease_of(identity, chat)
        while True:
            holder = await self._leases.holder(name)
            if holder is None or holder.owner == self.owner:
                return True
            await asyncio.sleep(self._poll_s)
            if gone():
                return False
            await self._mark(name)

    async def _mark(self, name: str) -> None:
        await self._leases.acquire(VIEW + name, self.owner, self._view_ms)  # None: another's

    async def watched(self, identity: str, chat: str) -> bool:
        """Someone follows the chat's turn from another instance (a live mark)."""
        name = lease_of(identity, chat)
        try:
            mark = await self._leases.holder(VIEW + name)
        except StorageError as exc:  # nobody can follow without the database
            log.warning("web: whether %s is followed elsewhere not read: %s", name, exc)
            return False
        if mark is not None:
            log.info("web: turn of %s kept: followed from %s", name, mark.owner)
        return mark is not None


async def stored_final(archive: ConversationArchive, key: SessionKey, now: float) -> Final:
    """The answer the chat's last turn stored, as a `final` (silent: none stored)."""
    page = await archive.page(key, None, None, 1, now)
    last = page.messages[-1] if page is not None and page.messages else None
    if last is None or last["role"] != "assistant" or last["status"] == "summary":
        return Final("", kind="silent")
    kind = KINDS.get(last["status"], "answer")
    return Final(stopped_text(last["text"]) if kind == "stopped" else last["text"], kind=kind)
