"""N16: removing a saved tool. `/tool rm NAME` without `me.` (one word from the
harmless `/tool drop NAME`) removes nothing and asks for the full name (a button
sends it); `/tool rm me.NAME` removes it at once with an "↩ Undo" button, and
`/tool undo me.NAME` brings back exactly that version."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Final
from forge.library import ToolLibrary
from tests.conftest import Clock, ScriptedBackend, web_msg
from tests.consent import keep

SOURCE = 'def run(text: str) -> int:\n    """Count words."""\n    return len(text.split())\n'


@pytest.fixture
async def made(settings: Settings, clock: Clock, home: Path) -> AsyncIterator[Roost]:
    """A roost where the person saved me.wc2 (written by the model, kept by consent)."""
    backend = ScriptedBackend()
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    create = {"name": "wc2", "description": "count words", "source": SOURCE}
    backend.steps += [[("forge_create", json.dumps(create))], "made"]
    await roost.core.handle(web_msg("make it", 1))
    saved = await keep(lambda t: roost.core.handle(web_msg(t, 2)), "wc2")
    assert saved.text.startswith("Saved me.wc2"), saved.text
    yield roost
    await roost.aclose()


def library(roost: Roost) -> ToolLibrary:
    return ToolLibrary(roost.tenant_dirs("local").tools, lambda: 0)


def tools_of(roost: Roost) -> list[str]:
    return [t.spec.name for t in library(roost).list()]


async def send(roost: Roost, text: str, n: int) -> Final:
    return await roost.core.handle(web_msg(text, n))


async def test_a_bare_name_removes_nothing_and_offers_the_full_command(made: Roost) -> None:
    reply = await send(made, "/tool rm wc2", 3)
    assert reply.text.startswith("Not removed: /tool rm takes the saved tool's full name."), reply
    assert "/tool rm me.wc2" in reply.text
    assert tools_of(made) == ["wc2"]
    (button,) = reply.actions
    assert button.command == "/tool rm me.wc2"
    removed = await send(made, button.command, 4)
    assert removed.text == "Removed me.wc2."
    assert tools_of(made) == []


async def test_removal_can_be_undone_with_the_same_version(made: Roost) -> None:
    before = library(made).show("wc2").spec.sha256
    reply = await send(made, "/tool rm me.wc2", 3)
    assert reply.text == "Removed me.wc2."
    (undo,) = reply.actions
    assert undo.command == "/tool undo me.wc2" and undo.label.startswith("↩ Undo")
    assert tools_of(made) == []
    back = await send(made, undo.command, 4)
    assert back.text.startswith(f"Brought back me.wc2 (sha256 {before[:12]}"), back.text
    assert library(made).show("wc2").spec.sha256 == before
    assert "me.wc2" in (await send(made, "/tools", 6)).text
    again = await send(made, undo.command, 7)  # consumed: nothing more to bring back
    assert again.text.startswith("There is no removed me.wc2"), again.text
    saved = [e[2] for e in made.audit.events if e[0] == "tool.saved"]
    assert saved[-1] == {"name": "me.wc2", "hash": before[:12], "replace": False}


async def test_undo_brings_the_tool_back_with_its_usage(made: Roost, clock: Clock) -> None:
    """`/tool rm` then `/tool undo` gave the tool back as never used (s38 left): the undo
    brings back its calls, errors and last use too, and when it was first saved."""
    used = ToolLibrary(made.tenant_dirs("local").tools, lambda: 1_780_000_000_000)
    used.record_use("wc2", True)
    used.record_use("wc2", False)
    created = library(made).show("wc2").created_ms
    listed = (await send(made, "/tools", 3)).text
    assert "· 2 calls, last use 2026-05-28 20:26 UTC" in listed, listed
    await send(made, "/tool rm me.wc2", 4)
    clock.advance(86400)
    assert (await send(made, "/tool undo me.wc2", 5)).text.startswith("Brought back me.wc2")
    assert (await send(made, "/tools", 6)).text == listed
    back = library(made).show("wc2")
    assert (back.usage.calls, back.usage.errors) == (2, 1)
    assert back.created_ms == created


async def test_a_removal_kept_by_an_older_roost_is_brought_back_unused(made: Roost) -> None:
    """A `removed/me.NAME.json` written before usage was kept in it still undoes."""
    await send(made, "/tool rm me.wc2", 3)
    kept = made.tenant_dirs("local").tools / "removed" / "me.wc2.json"
    data = json.loads(kept.read_text())
    for key in ("created_ms", "calls", "errors", "last_used_ms"):
        del data[key]
    kept.write_text(json.dumps(data))
    assert (await send(made, "/tool undo me.wc2", 4)).text.startswith("Brought back me.wc2")
    assert "· 0 calls, last use never" in (await send(made, "/tools", 5)).text
