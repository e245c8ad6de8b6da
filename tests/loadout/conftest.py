"""Fixtures for loadout tests: a real home, a real SQLite database, a recording audit."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.app.database import open_database
from bridge.app.loadout import Loadout, build_loadout
from bridge.core.config import Settings, load_settings
from bridge.loadout.chat_settings import ChatSettings
from bridge.storage.protocol import Database
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext
from tests.conftest import Clock, ScriptedBackend


def inbound(
    text: str = "hi",
    chat: str = "c1",
    channel: str = "web",
    identity: str = "local",
    msg_id: str | None = None,
) -> Inbound:
    return Inbound(channel, identity, chat, text, msg_id or os.urandom(4).hex())


def turn_for(
    dirs: TenantDirs,
    clock: Clock,
    text: str = "hi",
    chat: str = "c1",
    channel: str = "web",
    msg_id: str | None = None,
) -> TurnContext:
    return TurnContext(dirs, inbound(text, chat, channel, msg_id=msg_id), clock)


@pytest.fixture
def audit() -> MemoryAudit:
    return MemoryAudit()


def made_home(settings: Settings) -> Path:
    settings.home.mkdir(parents=True, exist_ok=True)
    return settings.home / "roost.db"


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[Database]:
    database = await open_database(made_home(settings))
    yield database
    await database.aclose()


@pytest.fixture
async def chats(db: Database) -> ChatSettings:
    """The chat settings store, loaded, with its `TableChanges` (as the daemon's)."""
    chats = ChatSettings(db)
    await chats.load()
    return chats


@pytest.fixture
def lo(settings: Settings, chats: ChatSettings, audit: MemoryAudit) -> Loadout:
    return build_loadout(settings, chats, audit)


@pytest.fixture
def alice(settings: Settings) -> TenantDirs:
    return TenantDirs.of(settings.home, "alice").ensure()


@pytest.fixture
def bob(settings: Settings) -> TenantDirs:
    return TenantDirs.of(settings.home, "bob").ensure()


@pytest.fixture
def two_tenant_settings(home: Path) -> Settings:
    return load_settings(tenants={"alice": {"telegram_ids": [111]}, "bob": {"telegram_ids": [222]}})


@pytest.fixture
async def make_roost(clock: Clock) -> AsyncIterator[Any]:
    made: list[Roost] = []

    async def factory(settings: Settings, *steps: object) -> Roost:
        roost = await build(
            settings, backend=ScriptedBackend(*steps), audit=MemoryAudit(), clock=clock
        )
        made.append(roost)
        return roost

    yield factory
    for roost in made:
        await roost.aclose()
