"""The WhatsApp channel and its outbox deliver, made from `[whatsapp]` and plain hooks.

The composition root (`bridge.app.channels_up`, the `whatsapp` row) passes
the core's `answer`, the `Database`, who a sender is (`Receiving`) and the
app's hooks; everything WhatsApp-specific is put together here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from bridge.channels.common.shared import Cluster
from bridge.channels.whatsapp.channel import Secrets, WhatsAppChannel
from bridge.channels.whatsapp.client import GraphClient
from bridge.channels.whatsapp.inbox import WhatsAppInbox
from bridge.channels.whatsapp.media import Receiving
from bridge.channels.whatsapp.outbox import WAITING, Template, WhatsAppOutbox
from bridge.channels.whatsapp.reply import Speak, Undelivered
from bridge.channels.whatsapp.store import WhatsAppStore
from bridge.core.config import ConfigError
from bridge.core.config_sections import WhatsAppSettings
from bridge.schedule.service import ScheduleService
from bridge.storage.protocol import Database
from bridge.types.messages import Answer


@dataclass(frozen=True, slots=True)
class Made:
    channel: WhatsAppChannel
    outbox: WhatsAppOutbox


def secrets_of(settings: WhatsAppSettings) -> Secrets:
    if settings.app_secret is None or settings.phone_number_id is None:
        raise ConfigError("whatsapp.app_secret and whatsapp.phone_number_id are required")
    verify = settings.verify_token.get_secret_value() if settings.verify_token else ""
    return Secrets(
        settings.app_secret.get_secret_value().encode(), verify.encode(), settings.phone_number_id
    )


def make_whatsapp(
    settings: WhatsAppSettings,
    answer: Answer,
    db: Database,
    schedule: ScheduleService,
    *,
    receiving: Receiving | None = None,
    undelivered: Undelivered | None = None,
    speak: Speak | None = None,
    ignored: Callable[[str, int], None] = lambda kind, n: None,
    client: GraphClient | None = None,
    clock: Callable[[], float] = time.time,
    cluster: Cluster | None = None,
    owner: str = "",
) -> Made:
    """The channel (mount it on the web app) and the deliver for its outbox entries.
    `cluster` (instances sharing the number): messages are stored first and answered by
    the holder of the person's lease; `owner` names this process in the inbox."""
    secrets = secrets_of(settings)
    if settings.access_token is None:
        raise ConfigError("whatsapp.access_token is required")
    if client is None:
        token = settings.access_token.get_secret_value()
        client = GraphClient(settings.api_base_url, token, secrets.phone_number_id)
    store = WhatsAppStore(db)

    async def woke(tenant: str, chat: str) -> None:  # the person wrote: waiting entries go now
        if await schedule.outbox.due_now(tenant, "whatsapp", chat, WAITING, int(clock() * 1000)):
            schedule.changed()

    channel = WhatsAppChannel(
        secrets,
        answer,
        client,
        store,
        media_hosts=tuple(settings.media_hosts),
        receiving=receiving,
        undelivered=undelivered,
        speak=speak,
        woke=woke,
        ignored=ignored,
        clock=clock,
        inbox=WhatsAppInbox(db, secrets.phone_number_id, owner) if cluster is not None else None,
        cluster=cluster,
    )
    template = (
        Template(settings.template, settings.template_language, settings.template_chars)
        if settings.template
        else None
    )
    deliver = WhatsAppOutbox(channel.out, store, schedule.outbox.parts, template, clock)
    return Made(channel, deliver)
