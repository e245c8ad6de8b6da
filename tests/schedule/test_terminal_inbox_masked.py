"""`roost chat`'s inbox masks what it shows with the vault as it is when it shows it.

A reminder or job answer for a terminal chat waits in the outbox, masked with
the vault of the moment it was queued. A value the person vaults afterwards
must not show in clear when `roost chat` prints the message (the web page and
every channel delivery mask again the same way).
"""

from __future__ import annotations

from bridge.app.build import Roost
from bridge.cli.daemon import terminal_inbox
from bridge.loadout.vault import set_value
from bridge.schedule.outbox import OutboxStore
from tests.masking import m

DOOR = "Q7x9-Lmn2-Door"


async def test_a_value_vaulted_after_the_message_was_queued_is_masked(roost: Roost) -> None:
    tenant = roost.settings.local_tenant
    outbox = OutboxStore(roost.database)
    await outbox.enqueue(tenant, "cli", "terminal", m(f"⏰ door code {DOOR}"), "job:a:1", now_ms=1)
    set_value(roost.tenant_dirs(tenant), "door", DOOR)  # vaulted after it was queued
    shown = await terminal_inbox(roost, "terminal").missed()
    assert shown == ["⏰ door code [vault:door]"]
    assert all(DOOR not in text for text in shown)
