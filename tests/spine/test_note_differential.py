"""What the model is given before the newest message (the Now note and the memory
topics that match it) against a fresh computation, over seeded random turns.

Differential: turns of two chats, the clock moved by seconds, minutes or across an
hour and a day, the person's time zone changed in their profile, memory topics saved,
changed and deleted (to none), messages that match a topic or none. On every turn
the note the backend receives (the message before the newest one) must be exactly
`mask(now_note(now, zone) + render(choose(score_notes(...))))` worked out from
scratch (topics listed anew by the store, scored against every note), and the
newest message must be the masked message: the memos of the note message
(`TurnRunner._note_message`), of the topics (`bridge.app.memory_notes`) and of the
scoring (`score_held`, none for a memory without topics) change no byte of it.
"""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.app.memory_notes import _text, render
from bridge.core.config import Settings
from bridge.memory.store import Provenance
from bridge.prompt.now import now_note
from bridge.recall.notes import choose, score_notes
from bridge.schedule.zone import tenant_zone
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import Clock, ScriptedBackend

WORDS = ("basil", "tomatoes", "bicycle", "garden", "Fahrrad", "Kuchen", "rain", "office")
ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata")
PROV = Provenance("person", "web", "c1", "1")


@pytest.fixture
async def roost(settings: Settings, clock: Clock) -> AsyncIterator[Roost]:
    made = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    yield made
    await made.aclose()


def _fresh(roost: Roost, dirs: TenantDirs, message: str, now: float) -> str:
    """The note as worked out from scratch: the zone read from the profile on disk, the
    topics listed anew by the store and scored against every note."""
    zone = tenant_zone(dirs, roost.loadout.prompt.taker.default_tz)
    memory = roost.settings.memory
    listed = [(t.name, _text(t)) for t in roost.loadout.memory.store.topics(dirs)]
    chosen = choose(score_notes(message, listed), memory.inject_floor, memory.inject_chars)
    parts = [now_note(now, zone), render(chosen)]
    return "\n\n".join(p for p in parts if p)


def _set_zone(dirs: TenantDirs, zone: str) -> None:
    tmp = dirs.user_md.with_name("USER.md.tmp")
    tmp.write_text(f"- timezone: {zone}\n- name: Alex\n")
    os.replace(tmp, dirs.user_md)


async def test_every_turn_gets_the_note_of_a_fresh_computation(roost: Roost, clock: Clock) -> None:
    rng = random.Random(21)
    dirs = TenantDirs.of(roost.settings.home, "local")
    store = roost.loadout.memory.store
    backend: Any = roost.backend
    await roost.core.handle(Inbound("web", "local", "c1", "hello", "warm"))
    names: set[str] = set()
    seen: list[str] = []
    for n in range(120):
        step = rng.random()
        if step < 0.3:
            clock.advance(rng.choice((1, 7, 59, 61, 3600, 86_400 + 13)))
        elif step < 0.4:
            zone = rng.choice(ZONES)
            _set_zone(dirs, zone)
            assert tenant_zone(dirs, "UTC") == zone
        elif step < 0.6:
            name = f"topic {rng.randrange(4)}"
            body = " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))
            store.save(dirs, name, "user", f"about {name}", body, PROV, clock())
            names.add(name)
        elif step < 0.7 and names:
            name = rng.choice(sorted(names))
            store.delete(dirs, name, clock())
            names.discard(name)
        text = " ".join(rng.choices((*WORDS, "hello", "what", "now"), k=rng.randint(1, 4)))
        chat = rng.choice(("c1", "c2"))
        final = await roost.core.handle(Inbound("web", "local", chat, text, f"m{n}"))
        assert final.kind == "answer"
        sent = backend.requests[-1].messages
        assert sent[-1].content == text
        expected = _fresh(roost, dirs, text, clock())
        assert sent[-2].role == "user" and sent[-2].content == expected, n
        seen.append(expected)
    assert {zone for zone in ZONES if zone in "".join(seen)} == set(ZONES)
    assert any("[From memory" in s for s in seen) and any("[From memory" not in s for s in seen)
