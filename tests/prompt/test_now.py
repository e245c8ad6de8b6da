""" "Now" in every turn: the minute in the person's zone, before the newest message;
the system prompt and the history stay byte-identical (injected clock)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from bridge.prompt.now import now_note
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import ModelRequest
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend


@pytest.fixture
async def roost(home: Path, clock: Clock) -> AsyncIterator[Roost]:
    settings = load_settings(schedule={"timezone": "Europe/Berlin"})
    made = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    yield made
    await made.aclose()


async def turn(roost: Roost, text: str) -> ModelRequest:
    await roost.core.handle(Inbound("web", "local", "c1", text, f"{abs(hash(text)):032x}"[:32]))
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    return backend.requests[-1]


def test_the_note_names_weekday_date_minute_and_zone() -> None:
    # 1_800_000_000 = Fri 15 Jan 2027 08:00:00 UTC; seconds are dropped
    assert now_note(1_800_000_059, "Europe/Berlin") == (
        "[Now: Friday 15 January 2027, 09:00 (Europe/Berlin, UTC+01:00)]"
    )
    assert now_note(1_800_000_000, "America/St_Johns") == (
        "[Now: Friday 15 January 2027, 04:30 (America/St_Johns, UTC-03:30)]"
    )
    summer = 1_800_000_000 + 180 * 86_400  # mid-July: daylight saving time
    assert now_note(summer, "Europe/Berlin").endswith("(Europe/Berlin, UTC+02:00)]")


async def test_each_turn_carries_now_and_keeps_its_prefix(roost: Roost, clock: Clock) -> None:
    first = await turn(roost, "hello")
    assert [m.content for m in first.messages] == [
        "[Now: Friday 15 January 2027, 09:00 (Europe/Berlin, UTC+01:00)]",
        "hello",
    ]
    clock.advance(20)  # the same minute
    second = await turn(roost, "and you?")
    assert second.system == first.system
    assert second.messages[2].content == first.messages[0].content  # same bytes
    clock.advance(60)  # the next minute
    third = await turn(roost, "bye")
    assert third.system == first.system  # the system prompt never carries the time
    assert third.messages[-2].content.startswith("[Now: Friday 15 January 2027, 09:01 ")
    history = [m.content for m in third.messages[:-2]]
    assert history == ["hello", "ok", "and you?", "ok"]  # stored without the note
    assert "Now" not in third.system


async def test_the_profile_zone_is_used(roost: Roost) -> None:
    await roost.core.handle(Inbound("web", "local", "c1", "/profile set timezone Asia/Tokyo", "1"))
    request = await turn(roost, "what time is it?")
    assert request.messages[-2].content == (
        "[Now: Friday 15 January 2027, 17:00 (Asia/Tokyo, UTC+09:00)]"
    )


def test_the_note_is_made_once_a_minute_and_follows_a_zone_change() -> None:
    from bridge.prompt import now as now_module

    # 2026-03-29 01:00 UTC: Berlin goes from UTC+01:00 to UTC+02:00
    switch = 1_774_746_000.0
    now_module._note_at.cache_clear()
    before = [now_note(switch - s, "Europe/Berlin") for s in (60, 45, 30, 1)]
    assert set(before) == {"[Now: Sunday 29 March 2026, 01:59 (Europe/Berlin, UTC+01:00)]"}
    after = now_note(switch, "Europe/Berlin")
    assert after == "[Now: Sunday 29 March 2026, 03:00 (Europe/Berlin, UTC+02:00)]"
    assert now_note(switch + 59.9, "Europe/Berlin") == after
    info = now_module._note_at.cache_info()
    assert (info.misses, info.hits) == (2, 4)  # one note per minute, reused within it
