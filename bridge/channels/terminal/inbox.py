"""Proactive messages in the terminal: reminders and job answers for an open `roost chat`.

The terminal is not a push channel. The daemon runs a terminal chat's jobs
like any other chat's and hands their outbox entries to `keep_for_terminal`,
which takes them as delivered (they stay in the outbox, as every delivered
entry does, for 7 days). An open `roost chat` reads its chat's entries itself
(`TerminalInbox`): at start the ones it has not shown yet ("while you were
away"), then each new one within `interval_s`, printed between answers,
never inside one. Which entry was shown last is remembered per chat
(`chat_settings` key `outbox_seen`), so each message shows once, across
restarts too. A chat `roost chat` never opened shows everything waiting for
it: only a `/remind` or `/every` sent to it (`roost send --chat NAME`) puts
anything there, and its confirmation promised it would show here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from bridge.schedule.outbox import OutboxEntry

SEEN_KEY: Final = "outbox_seen"

Fetch = Callable[[int], Awaitable[Sequence[Mapping[str, Any]]]]  # after id -> {id, text, ...}
Show = Callable[[str], Awaitable[None]]


async def keep_for_terminal(entry: OutboxEntry) -> None:
    """The daemon's `deliver` for channel `cli`: nothing to send, the terminal reads it."""
    return None


class TerminalInbox:
    """One terminal chat's proactive messages, shown once each."""

    def __init__(
        self,
        fetch: Fetch,
        load: Callable[[], str | None],
        save: Callable[[str], None],
        *,
        interval_s: float = 1.0,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self._fetch = fetch
        self._load, self._save = load, save
        self._interval_s, self._sleep = interval_s, sleep
        self._seen = 0

    async def missed(self) -> list[str]:
        """What arrived since this chat last showed something, or all that waits for a chat
        never opened (call once, at start)."""
        stored = self._load()
        self._seen = int(stored) if stored is not None and stored.isdigit() else 0
        messages = await self._fetch(self._seen)
        for message in messages:
            self._mark(message)
        return [str(m["text"]) for m in messages]

    def _mark(self, message: Mapping[str, Any]) -> None:
        self._seen = max(self._seen, int(message["id"]))
        self._save(str(self._seen))

    async def watch(self, show: Show) -> None:
        """Show each new message as it arrives, until cancelled."""
        while True:
            await self._sleep(self._interval_s)
            for message in await self._fetch(self._seen):
                await show(str(message["text"]))
                self._mark(message)
