"""The Matrix channel and its outbox deliver, made from `[matrix]` and plain hooks.

The composition root (`bridge.app.channels_up`, the `matrix` row) passes the
core's `answer`, the `Database`, who a sender is (`Receiving`) and the app's
hooks; everything Matrix-specific is put together here. mautrix is imported
only from here on: other commands never pay for it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

from bridge.channels.common.shared import Cluster
from bridge.channels.matrix.api import MatrixClient
from bridge.channels.matrix.channel import MatrixChannel
from bridge.channels.matrix.inbox import MatrixInbox
from bridge.channels.matrix.media import Receiving
from bridge.channels.matrix.outbox import MatrixOutbox
from bridge.channels.matrix.reply import Speak, Undelivered
from bridge.channels.matrix.store import MatrixStore
from bridge.core.config import ConfigError
from bridge.core.config_sections import MatrixSettings
from bridge.storage.leases import Singleton
from bridge.storage.protocol import Database
from bridge.types.messages import Answer


@dataclass(frozen=True, slots=True)
class Made:
    channel: MatrixChannel
    outbox: MatrixOutbox


def make_matrix(
    settings: MatrixSettings,
    answer: Answer,
    db: Database,
    *,
    receiving: Receiving | None = None,
    undelivered: Undelivered | None = None,
    speak: Speak | None = None,
    ignored: Callable[[str, int], None] = lambda kind, n: None,
    client: MatrixClient | None = None,
    cluster: Cluster | None = None,
    owner: str = "",
) -> Made:
    """The channel (start it: it syncs in a task) and the deliver for its outbox entries.
    `cluster` (instances sharing the account): only the holder of the account's sync
    lease syncs; `owner` names this process on it and in the inbox (unique per start)."""
    if settings.homeserver is None or settings.user_id is None or settings.access_token is None:
        raise ConfigError("matrix.homeserver, matrix.user_id and matrix.access_token are required")
    if client is None:
        client = MatrixClient(settings.homeserver, settings.access_token.get_secret_value())
    store = MatrixStore(db, settings.user_id)
    inbox = MatrixInbox(db, settings.user_id, owner or secrets.token_hex(6))
    lease = (
        Singleton(cluster.leases, f"matrix:sync:{settings.user_id}", owner, cluster.ttl_ms)
        if cluster is not None
        else None
    )
    channel = MatrixChannel(
        client,
        store,
        answer,
        settings.user_id,
        allowed_rooms=settings.allowed_rooms,
        receiving=receiving,
        undelivered=undelivered,
        speak=speak,
        every_s=settings.edit_every_s,
        ignored=ignored,
        sync_lease=lease,
        inbox=inbox,
    )
    return Made(channel, MatrixOutbox(channel.out, store))
