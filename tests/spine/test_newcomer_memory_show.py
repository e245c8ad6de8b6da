"""`/memory show NAME --history` prints each text once (s46 newcomer, finding 7).

A `/remember` saves its text as the topic's description and its body alike, and
`/memory show coffee --history` printed "likes flat white" twice in each earlier
version (and the current one twice too). A topic whose body says more than its
description still shows both. Through the real core, as a chat sends.
"""

from __future__ import annotations

import json

from bridge.core.config import Settings
from tests.conftest import Clock, ScriptedBackend, web_msg


async def test_a_remembered_text_is_shown_once_in_each_version(
    settings: Settings, clock: Clock
) -> None:
    from bridge.app.build import build
    from bridge.types.audit_sink import MemoryAudit

    roost = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    try:

        async def say(text: str, n: int) -> str:
            return (await roost.core.handle(web_msg(text, n), None)).text

        assert "Remembered as 'coffee'" in await say("/remember coffee: likes flat white", 1)
        clock.now += 60
        assert (await say("/remember coffee: prefers tea now", 2)).startswith("Updated 'coffee'")
        shown = await say("/memory show coffee --history", 3)
        assert shown.count("likes flat white") == 1, shown
        assert shown.count("prefers tea now") == 1, shown
        assert shown.startswith("coffee (user): prefers tea now\nsaved by you on web")
        assert "Earlier versions (1, newest first):" in shown
        assert (await say("/memory show coffee", 4)).count("prefers tea now") == 1
    finally:
        await roost.aclose()


async def test_a_body_that_says_more_than_the_description_is_still_shown(
    settings: Settings, clock: Clock
) -> None:
    from bridge.app.build import build
    from bridge.types.audit_sink import MemoryAudit

    args = {"name": "coffee", "type": "user", "description": "coffee", "content": "Espresso."}
    backend = ScriptedBackend([("memory_save", json.dumps(args))], "noted")
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    try:
        await roost.core.handle(web_msg("I like espresso", 1), None)
        clock.now += 60
        await roost.core.handle(web_msg("/remember coffee: tea now", 2), None)
        shown = (await roost.core.handle(web_msg("/memory show coffee --history", 3), None)).text
        assert "\ncoffee\nEspresso." in shown, shown
    finally:
        await roost.aclose()
