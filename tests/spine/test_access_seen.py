"""`roost access list` LAST SEEN is the identity's last message, whatever it was.

A configured person who only sends commands, or writes in a group, was never
"seen" (the column read the private chat's last model turn); a paired one was
up to a minute behind. Every admitted message now stamps its identity.
"""

from __future__ import annotations

import asyncio
import io
from argparse import Namespace
from pathlib import Path

from bridge.app.build import build
from bridge.app.database import open_database
from bridge.cli.access import people, run_list
from bridge.core.config import load_settings
from bridge.core.pairing import PairingStore
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend


async def test_a_command_is_seen_at_once(home: Path, clock: Clock) -> None:
    settings = load_settings(tenants={"alice": {"telegram_ids": [111]}})
    roost = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    try:
        await roost.core.handle(Inbound("telegram", "111", "111", "/status", "1"))
        clock.advance(90)
        group = Inbound("telegram", "111", "-100:111", "/whoami", "2", is_private=False)
        await roost.core.handle(group)
    finally:
        await roost.aclose()
    database = await open_database(home / "roost.db")
    try:
        (alice,) = await people(settings, database, PairingStore(database))
    finally:
        await database.aclose()
    assert alice.identity == "telegram:111" and alice.last_seen == clock.now
    out = io.StringIO()
    assert await asyncio.to_thread(run_list, Namespace(), settings, out) == 0
    assert "\t-\n" not in out.getvalue()  # not "never seen"
