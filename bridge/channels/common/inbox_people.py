"""A person's rows in the channels' durable inboxes, found by who sent them (`roost forget`).

`channel_inbox` has no tenant column, and cannot have one: a row is stored
before anything knows whose its sender is (Telegram stores every update of
a `getUpdates` answer, a stranger's too, before the core reads it; Matrix
and WhatsApp store what a sync or a webhook brought). What names the sender
is the row's `chat`, roost's chat id: the person's own id in a private chat
(Telegram user id, Matrix user id, WhatsApp wa_id), `<group>:<user id>` in a
Telegram group, `<room>|<user id>` in a Matrix group room; an update of a
kind roost does not answer (an edited message) has no chat, and its payload
(while the row is open) names the sender (`from.id`). So `forget_senders`
deletes every row (open ones hold the message's text; done ones its ids and
times) whose sender is one of a tenant's identities, given as (channel,
identity): the configured ones, the paired ones and the ones seen
(`bridge.app.forgetting`). The same identities' direct Matrix rooms
(`matrix_direct`, the person's user id and room) go too. A stranger's rows
belong to no tenant; once they pair, their identity is the tenant's and
their earlier rows are found by it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Final

from bridge.storage.protocol import Database

GROUP_SEPARATORS: Final = {"telegram": ":", "matrix": "|"}  # "<group><sep><person>"


def sender_of(channel: str, chat: str, payload: str) -> str:
    """The identity a row's message came from ('' when the row does not say)."""
    if chat:
        sep = GROUP_SEPARATORS.get(channel)
        if sep is None or (channel == "matrix" and chat.startswith("@")):  # a direct room
            return chat
        return chat.rsplit(sep, 1)[-1]
    try:
        update = json.loads(payload) if payload else None
    except ValueError:
        return ""
    if not isinstance(update, Mapping):
        return ""
    for part in update.values():  # {"edited_message": {"from": {"id": ...}}}
        sender = part.get("from") if isinstance(part, Mapping) else None
        if isinstance(sender, Mapping) and sender.get("id") is not None:
            return str(sender["id"])
    return ""


async def forget_senders(db: Database, identities: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Delete the inbox rows of messages from these (channel, identity) and their direct
    Matrix rooms; rows deleted per table. Run it in the forgetting's transaction."""
    people = set(identities)
    if not people:
        return {"channel_inbox": 0, "matrix_direct": 0}
    rows = await db.fetch_all(
        "SELECT source, update_id, chat, payload FROM channel_inbox"
        " WHERE chat != '' OR payload != ''"
    )
    gone = 0
    for source, update_id, chat, payload in rows:
        channel = str(source).split(":", 1)[0]
        if (channel, sender_of(channel, str(chat), str(payload))) in people:
            gone += await db.execute(
                "DELETE FROM channel_inbox WHERE source = ? AND update_id = ?", (source, update_id)
            )
    rooms = 0
    for channel, identity in sorted(people):
        if channel == "matrix":
            rooms += await db.execute("DELETE FROM matrix_direct WHERE user_id = ?", (identity,))
    return {"channel_inbox": gone, "matrix_direct": rooms}
