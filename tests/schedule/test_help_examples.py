"""`/help remind` and `/help every` show the phrases README lists, and each one works.

`/help remind` said only "/remind <when> <text> — a reminder in this chat", with none
of the time formats (`in 20m`, `tomorrow 9:00`, `morgen 9 Uhr`) README and the error
replies use (newcomer37 F12). The examples are whole commands; each is sent here as
the person would copy it, and must be scheduled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, ScriptedBackend
from tests.schedule.sched_helpers import say


@pytest.fixture
async def roost(home: object, clock: Clock) -> AsyncIterator[Roost]:
    settings = load_settings(schedule={"timezone": "Europe/Berlin", "max_jobs": 20})
    made = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    yield made
    await made.aclose()


def examples(helped: str) -> list[str]:
    _, _, rest = helped.partition("\nFor example:\n")
    assert rest, helped
    return [line.strip() for line in rest.splitlines() if line.startswith("  /")]


@pytest.mark.parametrize("name", ["remind", "every"])
async def test_every_example_of_help_is_scheduled(roost: Roost, name: str) -> None:
    helped = await say(roost, f"/help {name}")
    shown = examples(helped)
    assert len(shown) >= 3 and all(e.startswith(f"/{name} ") for e in shown)
    for n, example in enumerate(shown):
        reply = await say(roost, example, chat=f"c{n}")
        assert reply.startswith(("⏰", "🔁")), (example, reply)
    assert len(await roost.schedule.jobs.list_jobs("local")) == len(shown)


async def test_the_short_help_stays_one_line_a_command(roost: Roost) -> None:
    assert "For example" not in await say(roost, "/help")
    assert "For example" not in await say(roost, "/help all")
