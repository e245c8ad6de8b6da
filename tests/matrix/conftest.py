"""A real Synapse for the Matrix tests, once for them all, and a roost wired to it.

`synapse` starts the homeserver (`synapse_server.start`) once for the Matrix tests
of a test process (package scope: under xdist they are one group, run in one block) and
stops it after the last of them, not at the end of the session (idle, it took about
0.5 s of CPU a minute); when `.venv-synapse` is missing the tests skip with a message,
unless ROOST_REQUIRE_MATRIX=1 (CI), which fails them instead. Each test
registers fresh accounts (`accounts`: the bot, alice, a stranger), so tests
share the server but no rooms or sync tokens. `running(settings)` builds a
roost (a scripted model unless one is given, a memory audit) and makes and
starts the channels of the real channel table, the Matrix row wired
exactly as `roost serve` wires it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.app.channels_up import CHANNELS, Launched, make_channels, start_channels, stop_channels
from bridge.channels.common.retry import Backoff
from bridge.channels.matrix.channel import MatrixChannel
from bridge.channels.matrix.outbox import MatrixOutbox
from bridge.core.config import Settings, load_settings
from bridge.types.audit_sink import AuditSink, MemoryAudit
from bridge.types.backend import Backend
from tests.conftest import ScriptedBackend
from tests.matrix.person import WAIT_S, Person
from tests.matrix.synapse_server import Account, NoSynapse, Synapse, start

FAST = Backoff(first_s=0.01, max_s=0.1, attempts=4)


@pytest.fixture(scope="package")
def synapse() -> Iterator[Synapse]:
    try:
        server = start()
    except NoSynapse as exc:
        if os.environ.get("ROOST_REQUIRE_MATRIX") == "1":
            pytest.fail(f"Synapse is required (ROOST_REQUIRE_MATRIX=1): {exc}")
        pytest.skip(f"Synapse not available ({exc}); `make synapse` installs it")
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Accounts:
    bot: Account
    alice: Account
    stranger: Account


@pytest.fixture
def accounts(synapse: Synapse) -> Accounts:
    tag = secrets.token_hex(3)
    return Accounts(
        synapse.register(f"roost{tag}"),
        synapse.register(f"alice{tag}"),
        synapse.register(f"stranger{tag}"),
    )


@pytest.fixture
async def alice(synapse: Synapse, accounts: Accounts) -> AsyncIterator[Person]:
    person = Person(synapse.url, accounts.alice.user_id, accounts.alice.access_token)
    yield person
    await person.close()


@pytest.fixture
async def stranger(synapse: Synapse, accounts: Accounts) -> AsyncIterator[Person]:
    person = Person(synapse.url, accounts.stranger.user_id, accounts.stranger.access_token)
    yield person
    await person.close()


def mx_settings(home: Path, synapse: Synapse, accounts: Accounts, **extra: Any) -> Settings:
    matrix = {
        "homeserver": synapse.url,
        "user_id": accounts.bot.user_id,
        "access_token": accounts.bot.access_token,
        "edit_every_s": 0.2,
        **extra.pop("matrix", {}),
    }
    tenants = extra.pop("tenants", {"alice": {"matrix_ids": [accounts.alice.user_id]}})
    return load_settings(home=home, web={"enabled": False}, matrix=matrix, tenants=tenants, **extra)


@dataclass
class Running:
    roost: Roost
    channel: MatrixChannel
    outbox: MatrixOutbox
    backend: Backend
    audit: AuditSink

    def events(self, name: str) -> list[dict[str, Any]]:
        assert isinstance(self.audit, MemoryAudit)
        return [dict(d) for e, _, d in self.audit.events if e == name]


@contextlib.asynccontextmanager
async def running(
    settings: Settings,
    backend: Backend | None = None,
    audit: AuditSink | None = None,
    *,
    configured: bool = False,
) -> AsyncIterator[Running]:
    """`configured`: the model of `[llm]` (a fake OpenAI server) instead of a script."""
    backend = None if configured else backend or ScriptedBackend()
    audit = audit if audit is not None else MemoryAudit()
    roost = await build(settings, backend=backend, audit=audit)
    backend = backend or roost.backend
    started: list[Launched] = []
    try:
        made = make_channels(settings, roost, CHANNELS)
        launched = made["matrix"]
        channel = launched.channel
        assert isinstance(channel, MatrixChannel) and isinstance(launched.deliver, MatrixOutbox)
        channel.client.backoff = FAST
        await start_channels(made, started)
        await asyncio.wait_for(channel.synced.wait(), WAIT_S)  # the first sync: what follows is new
        yield Running(roost, channel, launched.deliver, backend, audit)
    finally:
        await stop_channels(started)
        await roost.aclose()
