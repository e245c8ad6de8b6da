"""A roost whose WhatsApp row runs against FakeWhatsApp over real HTTP, in process.

`running(home, fake, ...)` builds a roost (a scripted model unless one is
given, a memory audit unless `chain=True`), makes and starts the channels of
the real channel table (the web server and the WhatsApp row, wired exactly
as `roost serve` wires them), points the fake's webhook sender at the web
server's `/whatsapp/webhook`, and stops everything in reverse order. The
Graph client's backoff is shortened (the policy is the same).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.app.channels_up import CHANNELS, Launched, make_channels, start_channels, stop_channels
from bridge.channels.common.retry import Backoff
from bridge.channels.whatsapp.channel import WhatsAppChannel
from bridge.channels.whatsapp.outbox import WhatsAppOutbox
from bridge.core.config import Settings, load_settings
from bridge.types.audit_sink import AuditSink, MemoryAudit
from bridge.types.backend import Backend
from tests.conftest import ScriptedBackend
from tests.fakes.fake_whatsapp import FakeWhatsApp

TOKEN = "EAAJBtestTOKEN0123456789abcdefghijklmnopqrstuvwxyz"
APP_SECRET = "0123456789abcdef0123456789abcdef"
VERIFY = "roost-verify-token-42"
ALICE = "4915112345678"
STRANGER = "4915199999999"
FAST = Backoff(first_s=0.001, max_s=0.01, attempts=4)


@pytest.fixture
async def fake() -> AsyncIterator[FakeWhatsApp]:
    async with FakeWhatsApp(TOKEN, APP_SECRET) as server:
        yield server


def wa_settings(home: Path, fake: FakeWhatsApp, **extra: Any) -> Settings:
    whatsapp = {
        "access_token": TOKEN,
        "app_secret": APP_SECRET,
        "verify_token": VERIFY,
        "phone_number_id": fake.phone_number_id,
        "api_base_url": fake.base_url,
        **extra.pop("whatsapp", {}),
    }
    tenants = extra.pop("tenants", {"alice": {"whatsapp_ids": [f"+{ALICE}"]}})
    return load_settings(home=home, web={"port": 0}, whatsapp=whatsapp, tenants=tenants, **extra)


@dataclass
class Running:
    roost: Roost
    channel: WhatsAppChannel
    outbox: WhatsAppOutbox
    fake: FakeWhatsApp
    backend: Backend
    audit: AuditSink
    web_port: int

    def events(self, name: str) -> list[dict[str, Any]]:
        assert isinstance(self.audit, MemoryAudit)
        return [dict(d) for e, _, d in self.audit.events if e == name]


@contextlib.asynccontextmanager
async def running(
    settings: Settings,
    fake: FakeWhatsApp,
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
        launched = made["whatsapp"]
        channel = launched.channel
        assert isinstance(channel, WhatsAppChannel) and isinstance(launched.deliver, WhatsAppOutbox)
        channel.client.backoff = FAST
        await start_channels(made, started)
        port = made["web"].port
        assert port is not None
        fake.webhook_url = f"http://127.0.0.1:{port()}/whatsapp/webhook"
        yield Running(roost, channel, launched.deliver, fake, backend, audit, port())
    finally:
        await stop_channels(started)
        await roost.aclose()
