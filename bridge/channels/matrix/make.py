"""The Matrix channel and its outbox deliver, made from `[matrix]` and plain hooks.

The composition root (`bridge.app.channels_up`, the `matrix` row) passes the
core's `answer`, the `Database`, who a sender is (`Receiving`) and the app's
hooks; everything Matrix-specific is put together here. mautrix is imported
only from here on: other commands never pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bridge.channels.matrix.api import MatrixClient
from bridge.channels.matrix.channel import MatrixChannel
from bridge.channels.matrix.media import Receiving
from bridge.channels.matrix.outbox import MatrixOutbox
from bridge.channels.matrix.reply import Speak, Undelivered
from bridge.channels.matrix.store import MatrixStore
from bridge.core.config import ConfigError
from bridge.core.config_sections import MatrixSettings
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
) -> Made:
    """The channel (start it: it syncs in a task) and the deliver for its outbox entries."""
    if settings.homeserver is None or settings.user_id is None or settings.access_token is None:
        raise ConfigError("matrix.homeserver, matrix.user_id and matrix.access_token are required")
    if client is None:
        client = MatrixClient(settings.homeserver, settings.access_token.get_secret_value())
    store = MatrixStore(db, settings.user_id)
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
    )
    return Made(channel, MatrixOutbox(channel.out, store))
