"""The access check on the storage layer keeps a chat's order: it awaits the database
(a paired person's binding, the `identity_seen` stamp), and the next message of the chat
must not reach the chat's lock first. The real core, the real SQLite `Database`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bridge.app.build import build
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend

N = 12
PEOPLE = ("111", "222")  # configured, paired


async def test_messages_sent_at_once_are_answered_in_order(home: Path, clock: Clock) -> None:
    settings = load_settings(tenants={"alice": {"telegram_ids": [111]}, "bob": {}})
    backend = ScriptedBackend()
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    try:
        code = await roost.pairing.issue("bob")
        paired = await roost.core.handle(Inbound("telegram", "222", "222", f"/pair {code}", "0"))
        assert "as **bob**" in paired.text
        clock.advance(60)  # the stamps are due again: each chat's first message writes one
        sent = [
            asyncio.create_task(roost.core.handle(Inbound("telegram", who, who, f"{who} q{n}", "")))
            for n in range(N)
            for who in PEOPLE
        ]
        finals = await asyncio.gather(*sent)
    finally:
        await roost.aclose()
    assert [f.kind for f in finals] == ["answer"] * len(sent)
    asked = [str(r.messages[-1].content) for r in backend.requests]
    for who in PEOPLE:
        mine = [text for text in asked if text.startswith(f"{who} ")]
        assert mine == [f"{who} q{n}" for n in range(N)], mine
