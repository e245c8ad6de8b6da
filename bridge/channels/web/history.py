"""The web page's history: a chat's conversations and their messages, from the daemon.

Routes (bearer token, scoped to its tenant): `GET /api/history?chat=C
[&conversation=ID][&before=SEQ][&limit=N]` -> `{"conversation", "messages":
[{"seq", "role", "text", "ts", "status"}], "more", "running"}` (newest last,
paged backwards by `before`; limit 50 by default, at most 200; the current
conversation opens with its summary, status `summary`, when it has one;
while a turn runs, `"pending": {"text", "ts"}` is the message it answers,
not stored yet; `running` is true too when the turn runs on another instance
sharing the home, `elsewhere`, without `pending`) and
`GET /api/conversations?chat=C` -> `{"conversations":
[{"id", "started_at", "updated_at", "turns", "title", "current"}]}` newest
first. With a `timeline` (`bridge.channels.web.timeline`), a page is the
chat as the person saw it, in time order: the proactive posts of its time
range (`"kind": "proactive"`), a scheduled job's run as its post (never its
prompt as the person's message; a failed run as its failure notice), the
slash commands sent from the page and their replies (`"kind": "command"`, at
most `limit` of them), a model answer with the one-tap offers it made
(`actions`, `settled` once taken); the current conversation's page names
`"newest_post"`, the id of the chat's newest outbox entry (the page lists
what comes after it). The texts are what the session stored (masked, without download
links), through the tenant's masker once more on the way out (`masks`: a
value put in the vault after it was said). Reads go to `bridge.core.conversations`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bridge.channels.web.commandlog import Sent
from bridge.channels.web.gate import WebGate, error
from bridge.channels.web.timeline import Timeline
from bridge.core.conversations import MAX_PAGE, ConversationArchive
from bridge.core.running import RunningTurns
from bridge.core.sessions import SessionKey
from bridge.types.masked import TextMask, masked_strings

DEFAULT_LIMIT = 50


class WebHistory:
    def __init__(
        self,
        gate: WebGate,
        archive: ConversationArchive,
        running: RunningTurns[SessionKey],
        clock: Callable[[], float] = time.time,
        elsewhere: Callable[[SessionKey], Awaitable[bool]] | None = None,  # runs on another
        masks: Callable[[str], TextMask] | None = None,  # a tenant's masker
        timeline: Timeline | None = None,  # posts, job runs and commands in their place
    ) -> None:
        self._gate, self._archive, self._running, self._clock = gate, archive, running, clock
        self._timeline = timeline
        self._elsewhere = elsewhere
        self._masks = masks

    def _shown(self, tenant: str) -> Callable[[str], str]:
        """What a text is on its way out: through the tenant's masker, so a value put in
        the vault after it was said is masked here as in every reply (the store keeps
        what was masked when it was written)."""
        if self._masks is None:
            return str
        return self._masks(tenant).mask

    def mount(self, app: web.Application) -> None:
        app.router.add_get("/api/history", self.history)
        app.router.add_get("/api/conversations", self.conversations)
        app[HISTORY] = self  # the search reads what the pages show

    @property
    def archive(self) -> ConversationArchive:
        return self._archive

    def shown(self, tenant: str) -> Callable[[str], str]:
        """A text of `tenant`'s as the history shows it (through the tenant's masker)."""
        return self._shown(tenant)

    async def forget(self, key: SessionKey, conversation: int) -> None:
        """The chat's kept commands of a deleted conversation go too."""
        if self._timeline is not None and self._timeline.commands is not None:
            await self._timeline.commands.drop(key, conversation)

    async def entries(self, key: SessionKey) -> list[Sent]:
        """The chat's kept commands and offers (read once for many conversations)."""
        if self._timeline is None or self._timeline.commands is None:
            return []
        return await self._timeline.commands.entries(key)

    async def whole(
        self,
        key: SessionKey,
        conversation: int,
        entries: list[Sent] | None = None,
        masked: bool = True,
    ) -> list[dict[str, Any]] | None:
        """All of a conversation's messages as its pages show them, oldest first, masked
        (None: no such conversation in this chat); `entries`: as read by `entries`;
        `masked` False: as stored (masked when stored; the caller masks what it shows
        through `shown`, a value vaulted since included)."""
        pages: list[list[dict[str, Any]]] = []
        before: int | None = None
        current = False
        while True:
            page = await self._archive.page(key, conversation, before, MAX_PAGE, self._clock())
            if page is None:
                return None
            current = page.current
            pages.insert(0, page.messages)
            seqs = [m["seq"] for m in page.messages if isinstance(m.get("seq"), int)]
            if not page.more or not any(s > 0 for s in seqs):
                break
            before = min(s for s in seqs if s > 0)
        listed = [m for p in pages for m in p]
        if self._timeline is not None:
            listed = await self._timeline.page(
                key, conversation, current, listed, False, None, None, entries
            )
        if not masked:
            return listed
        shown = self._shown(key.tenant)
        return [masked_strings(m, shown) for m in listed]

    async def history(self, request: web.Request) -> web.Response:
        key = self._gate.key(request)
        if isinstance(key, web.Response):
            return key
        numbers = [self._gate.number(request, n) for n in ("conversation", "before", "limit")]
        for value in numbers:
            if isinstance(value, web.Response):
                return value
        conversation, before, limit = (v if isinstance(v, int) else None for v in numbers)
        limit = limit or DEFAULT_LIMIT
        page = await self._archive.page(key, conversation, before, limit, self._clock())
        if page is None:
            return error(
                404, "no such conversation in this chat; GET /api/conversations lists them"
            )
        running = page.current and self._running.running(key)
        if page.current and not running and self._elsewhere is not None:
            running = await self._elsewhere(key)  # the page attaches: it follows from here
        shown = self._shown(key.tenant)
        listed = page.messages
        if self._timeline is not None:
            listed = await self._timeline.page(
                key, page.conversation, page.current, listed, page.more, before, limit
            )
        messages = [masked_strings(m, shown) for m in listed]  # quote, tool args too
        body: dict[str, Any] = {
            "conversation": page.conversation,
            "messages": messages,
            "more": page.more,
            "running": running,
        }
        if self._timeline is not None and page.current:
            body["newest_post"] = await self._timeline.newest_post(key)
        asked = self._running.asked(key) if running else None
        if asked is not None:
            body["pending"] = {"text": shown(asked[0]), "ts": asked[1]}
        return web.json_response(body)

    async def conversations(self, request: web.Request) -> web.Response:
        key = self._gate.key(request)
        if isinstance(key, web.Response):
            return key
        listed = await self._archive.listing(key, self._clock())
        shown = self._shown(key.tenant)
        return web.json_response({"conversations": [masked_strings(c, shown) for c in listed]})


HISTORY = web.AppKey("roost_web_history", WebHistory)
