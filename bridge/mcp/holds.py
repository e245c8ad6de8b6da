"""Which external MCP sessions each running turn holds, so a reload never closes one under it.

A turn is known by the asyncio task that runs it (a task runs one turn at a
time). `take` (the turn's start) makes the turn hold its tenant's links of
that moment; it keeps them until `release` (the turn's end), the task's next
turn, or the end of the task, whichever comes first, and is offered exactly
those links' tools meanwhile. A link a reload replaced or removed is
`retire`d: it never starts again, and it is closed once no turn holds it and
no call runs on it (`idle`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bridge.mcp.client import ServerLink

log = logging.getLogger("roost.mcp")

Links = tuple[ServerLink, ...]


class Holds:
    def __init__(self) -> None:
        self._held: dict[asyncio.Task[Any], tuple[str, Links]] = {}
        self._watched: set[asyncio.Task[Any]] = set()  # tasks whose end releases their hold
        self._retired: set[ServerLink] = set()  # retired, not closed yet
        self._closing: set[asyncio.Task[None]] = set()

    def take(self, tenant: str, links: Links) -> None:
        """The running turn holds `links` (the tenant's, now) until it ends."""
        task = asyncio.current_task()
        if task is None:
            return
        self.release()
        for link in links:
            link.users += 1
        self._held[task] = (tenant, links)
        if task not in self._watched:
            self._watched.add(task)
            task.add_done_callback(self._ended)

    def held(self, tenant: str) -> Links | None:
        """The links the running turn of `tenant` holds; None outside a turn."""
        task = asyncio.current_task()
        found = self._held.get(task) if task is not None else None
        return found[1] if found is not None and found[0] == tenant else None

    def release(self, task: asyncio.Task[Any] | None = None) -> None:
        task = task or asyncio.current_task()
        _, links = self._held.pop(task, ("", ())) if task is not None else ("", ())
        for link in links:
            link.users -= 1
            self.idle(link)

    def _ended(self, task: asyncio.Task[Any]) -> None:
        self._watched.discard(task)
        self.release(task)

    def retire(self, link: ServerLink) -> None:
        """A reload replaced or removed `link`: close it once nothing uses it."""
        link.retired = True
        self._retired.add(link)
        self.idle(link)

    def idle(self, link: ServerLink) -> None:
        """Close a retired link that no turn holds and no call uses."""
        if link in self._retired and link.users <= 0 and link.busy <= 0:
            self._retired.discard(link)
            log.info("MCP server %s of %s: closed after a reload", link.name, link.tenant)
            task = asyncio.get_running_loop().create_task(link.aclose())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        """Close every retired link, held or not, and wait for the closing ones."""
        links, self._retired = list(self._retired), set()
        await asyncio.gather(*(link.aclose() for link in links), *self._closing)
