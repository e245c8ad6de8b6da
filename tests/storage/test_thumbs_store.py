"""The web thumbnails' read of a message's stored files (`bridge.channels.web.thumbs`) through
the `Database` protocol, on both backends: the person's message of this chat, current or
archived, and nothing of another chat or tenant, nor the model's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.channels.web.thumbs import WebThumbs
from bridge.core.sessions import SessionKey
from bridge.storage.protocol import Database

META = '{"files":[{"kind":"photo","ref":"a.jpg"}]}'


async def nothing(tenant: str, fd: int) -> None:
    return None


def thumbs(db: Database) -> WebThumbs:
    gate: Any = None  # the route's checks are the daemon tests'; here the read alone
    return WebThumbs(gate, db, lambda tenant: Path("/nonexistent"), 1 << 20, nothing)


async def message(db: Database, tenant: str, chat: str, role: str) -> int:
    return int(
        await db.fetch_value(
            "INSERT INTO session_messages (tenant, channel, chat, turn, role, content, at, meta)"
            " VALUES (?, 'web', ?, 1, ?, 'look', 1.0, ?) RETURNING id",
            (tenant, chat, role, META),
        )
    )


async def test_the_meta_of_a_persons_message_of_this_chat_only(db: Database) -> None:
    web = thumbs(db)
    alice = SessionKey("alice", "web", "c")
    asked = await message(db, "alice", "c", "user")
    answered = await message(db, "alice", "c", "assistant")
    other_chat = await message(db, "alice", "d", "user")
    bobs = await message(db, "bob", "c", "user")
    assert await web._meta(alice, asked, None) == META
    for seq in (answered, other_chat, bobs, 10**6):
        assert await web._meta(alice, seq, None) is None
    assert await web._meta(SessionKey("bob", "web", "c"), bobs, None) == META


async def test_the_meta_of_an_archived_conversations_message(db: Database) -> None:
    web = thumbs(db)
    old = int(
        await db.fetch_value(
            "INSERT INTO conversations (tenant, channel, chat, started_at, updated_at,"
            " archived_at) VALUES ('alice', 'web', 'c', 1.0, 2.0, 3.0) RETURNING id"
        )
    )
    seq = int(
        await db.fetch_value(
            "INSERT INTO conversation_messages (conversation, tenant, role, text, at, meta)"
            " VALUES (?, 'alice', 'user', 'look', 1.0, ?) RETURNING id",
            (old, META),
        )
    )
    assert await web._meta(SessionKey("alice", "web", "c"), seq, old) == META
    assert await web._meta(SessionKey("alice", "web", "d"), seq, old) is None
    assert await web._meta(SessionKey("bob", "web", "c"), seq, old) is None
    assert await web._meta(SessionKey("alice", "web", "c"), seq, old + 1) is None
