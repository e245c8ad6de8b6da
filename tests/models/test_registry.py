"""The model registry across reloads: new turns get the new models, running turns keep theirs.

Backends are recording fakes made by the registry's own `make` seam, over a
real SQLite chat-settings table; the real core is used where a chat's model
disappears.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.app.models import ModelRegistry, build_generation
from bridge.core.config import LLMSettings, Settings, load_settings
from bridge.loadout.chat_settings import ChatSettings
from bridge.types.backend import Backend
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext
from tests.conftest import ScriptedBackend
from tests.fakes.fake_openai import FakeOpenAI
from tests.models.conftest import Make, models_toml, web, write_config


class Recorded(ScriptedBackend):
    def __init__(self, model: str) -> None:
        super().__init__()
        self.model, self.closed = model, 0

    def describe(self) -> str:
        return f"recorded model={self.model}"

    async def aclose(self) -> None:
        self.closed += 1


def settings_with(home: Path, *names: str) -> Settings:
    tables = "".join(f'[models.{n}]\nprovider = "offline"\nmodel = "{n}-1"\n' for n in names)
    write_config(f'[llm]\nprovider = "offline"\nmodel = "base"\n{tables}')
    return load_settings()


@pytest.fixture
def made() -> list[Recorded]:
    return []


@pytest.fixture
async def registry(home: Path, made: list[Recorded]) -> AsyncIterator[ModelRegistry]:
    def make(llm: LLMSettings, table: str | None = None) -> tuple[Backend, str]:
        made.append(Recorded(llm.model))
        return made[-1], "test"

    gen = build_generation(settings_with(home, "smart"), make)
    db = await open_database(home / "roost.db")
    chats = ChatSettings(db)
    await chats.load()
    yield ModelRegistry(gen, chats, make)
    await db.aclose()


def turn(home: Path, chat: str = "c1") -> TurnContext:
    return TurnContext(TenantDirs.of(home, "local"), Inbound("web", "local", chat, "x", "1"), float)


async def test_a_running_turn_keeps_its_backend_and_it_closes_when_the_turn_ends(
    home: Path, registry: ModelRegistry, made: list[Recorded]
) -> None:
    old_default, old_smart = made
    async with registry.hold(turn(home)) as held:
        assert held.backend is old_default
        registry.reload(settings_with(home, "smart"))  # a new generation of both
        async with registry.hold(turn(home, "c2")) as fresh:
            assert fresh.backend is made[2]  # a new turn: the new backend
        await asyncio.sleep(0)
        assert old_default.closed == 0 and old_smart.closed == 0  # still in use
    assert old_default.closed == 1 and old_smart.closed == 1
    assert made[2].closed == 0 and made[3].closed == 0


async def test_idle_old_backends_close_at_once_and_shutdown_closes_the_rest(
    home: Path, registry: ModelRegistry, made: list[Recorded]
) -> None:
    registry.reload(settings_with(home))  # smart removed
    await registry.aclose()
    assert [b.closed for b in made] == [1, 1, 1]
    assert registry.names() == [("default", "recorded model=base")]


async def test_a_reload_that_cannot_build_keeps_the_old_models(
    home: Path, registry: ModelRegistry, made: list[Recorded]
) -> None:
    bad = settings_with(home, "smart").model_copy(
        update={"models": {"smart": LLMSettings(provider="offline")}}
    )

    def broken(llm: LLMSettings, table: str | None = None) -> tuple[Backend, str]:
        raise ValueError("unknown LLM provider 'nope'")

    registry._make = broken  # the seam the reload uses
    assert registry.reload(bad) is False
    assert [name for name, _ in registry.names()] == ["default", "smart"]
    assert all(b.closed == 0 for b in made)


async def test_a_chat_whose_model_was_removed_falls_back_once_with_a_notice(
    make: Make, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    roost = await make(models_toml(first, second))
    chat = web(roost)
    await chat.say("/model smart")
    assert (await chat.say("on smart")).text == "echo: on smart"
    write_config(models_toml(first, None))
    assert roost.models.reload(load_settings())
    told = (await chat.say("and now?")).text
    assert told.startswith("echo: and now?")
    assert "The model 'smart' this chat used is no longer configured" in told
    assert "back on the default model, 'default'" in told
    assert (await chat.say("again")).text == "echo: again"  # told once
    assert [b["messages"][-1]["content"] for b in first.requests] == ["and now?", "again"]
    assert "This chat uses default" in (await chat.say("/model")).text


async def test_a_wrapped_backend_is_made_once_per_backend_and_again_after_a_reload(
    home: Path, registry: ModelRegistry, made: list[Recorded]
) -> None:
    wraps: list[Backend] = []

    def wrap(inner: Backend) -> Backend:
        wraps.append(inner)
        return Recorded(f"wrapped {inner.describe()}")

    registry._wrap = wrap
    async with registry.hold(turn(home)) as first, registry.hold(turn(home, "c2")) as second:
        assert second.backend is first.backend and first.backend is not made[0]
    async with registry.hold(turn(home)) as third:
        assert third.backend is first.backend
    assert wraps == [made[0]]
    registry.reload(settings_with(home, "smart"))
    async with registry.hold(turn(home)) as fresh:
        assert fresh.backend is not first.backend
    assert wraps == [made[0], made[2]]
