"""Watch a tenant's tools directory and say when the tool list changed.

`watch_tools` waits on the directory with watchfiles (inotify on Linux, its
own debounce) and, after each batch of file events, compares a fingerprint
of what `tools/list` would show; only a real change (a tool saved, replaced
or removed — not a usage counter written by a call) calls `on_change`. The
daemon, `/tool save` in a chat and `roost mcp` may all be different
processes: the files are the one truth they share.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import watchfiles

log = logging.getLogger("roost.mcp")


def _tool_file(change: tuple[watchfiles.Change, str]) -> bool:
    name = Path(change[1]).name
    return name.startswith("me.") and name.endswith((".json", ".py"))


async def watch_tools(
    directory: Path,
    fingerprint: Callable[[], str],
    on_change: Callable[[], Awaitable[None]],
    stop: asyncio.Event,
    ready: asyncio.Event | None = None,
) -> None:
    """Call `on_change` after each change of the tool list until `stop` is set.

    A missing `directory` is made (mode 0700): a partial tenant tree (only an upload's
    inbox) must not stop the server.
    """
    await asyncio.to_thread(directory.mkdir, mode=0o700, parents=True, exist_ok=True)
    seen = fingerprint()
    if ready is not None:
        ready.set()
    async for changes in watchfiles.awatch(
        directory, stop_event=stop, watch_filter=lambda c, p: _tool_file((c, p)), debounce=200
    ):
        now = fingerprint()
        if now == seen:
            continue
        seen = now
        log.info("the tool list changed (%d file events); telling MCP clients", len(changes))
        await on_change()
