"""A roost in Berlin with a scripted model, a recording audit and an injected clock."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend

BERLIN = ZoneInfo("Europe/Berlin")
# The shared clock starts at 1_800_000_000: Friday 15 January 2027, 08:00 UTC, 09:00 in Berlin.


def ms_at(zone: str, *args: int) -> int:
    return int(datetime(*args, tzinfo=ZoneInfo(zone)).timestamp() * 1000)  # type: ignore[misc]


Say = Callable[..., "object"]


@pytest.fixture
async def berlin(home: object, clock: Clock) -> AsyncIterator[Roost]:
    settings = load_settings(schedule={"timezone": "Europe/Berlin", "max_jobs": 4})
    roost = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    yield roost
    await roost.aclose()


async def say(roost: Roost, text: str, chat: str = "c1", channel: str = "web") -> str:
    identity = "local"
    final = await roost.core.handle(Inbound(channel, identity, chat, text, f"{abs(hash(text)):x}"))
    return final.text


def audit_text(roost: Roost) -> str:
    return json.dumps(roost.audit.events, default=str)  # type: ignore[attr-defined]
