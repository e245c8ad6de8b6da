"""Which turns a shutdown keeps as failed turns, and which it leaves alone.

`Core.drain` cancels what still runs when its grace ends. A turn of `handle`
(the page, the terminal: nothing answers it unless the person sends it again)
is kept for the history as a failed turn; a push channel's (`answer`) is not:
its durable inbox answers it after the restart. A turn cancelled while the
daemon does not stop (its caller went away) keeps nothing, as before.
"""

from __future__ import annotations

import asyncio
import contextlib

from bridge.app.build import build
from bridge.core.config import Settings
from bridge.types.messages import Final
from tests.conftest import Clock, web_msg
from tests.spine.test_drain import HangingBackend
from tests.waits import until


class PushReply:
    """A push channel's reply (`Reply`): what it was sent."""

    def __init__(self) -> None:
        self.sent: list[Final] = []

    def working(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    async def delta(self, piece: str) -> None:
        return None

    async def send(self, final: Final) -> None:
        self.sent.append(final)


async def test_only_the_turn_no_inbox_answers_again_is_kept(
    settings: Settings, clock: Clock
) -> None:
    backend = HangingBackend()
    roost = await build(settings, backend=backend, clock=clock)
    try:
        gone = asyncio.create_task(roost.core.handle(web_msg("the caller goes", 1, "g")))
        await until(lambda: backend.requests == 1, "the first turn asked its model")
        gone.cancel()  # the caller went away; the daemon does not stop
        await asyncio.gather(gone, return_exceptions=True)
        page = asyncio.create_task(roost.core.handle(web_msg("asked on the page", 2, "p")))
        push = asyncio.create_task(roost.core.answer(web_msg("from an inbox", 3, "i"), PushReply()))
        await until(lambda: backend.requests == 3, "both turns asked their model")
        assert await roost.core.drain(0) == 2
        assert page.cancelled() and push.cancelled()
        rows = await roost.database.fetch_all("SELECT role, text FROM failed_turns ORDER BY id")
    finally:
        await roost.aclose()
    assert len(rows) == 2, rows  # the page's message and why: nothing of the other two
    (who, asked), (said, why) = rows
    assert (who, asked, said) == ("user", "asked on the page", "assistant")
    assert "restarted" in why and "send it again" in why.lower()
