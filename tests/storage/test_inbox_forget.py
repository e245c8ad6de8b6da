"""`roost forget` takes a person's messages out of the channels' durable inboxes, on both backends.

`channel_inbox` has no tenant column (a row is stored before anyone knows
whose it is), so `storage.tenants.forget` never saw it: after a forget, the
forgotten person's messages still waiting there (their text, kept for the
next start, which would answer them) stayed in the database, and so did their
answered rows' ids and their direct Matrix room. `forget_in_database` now
deletes the rows whose sender is one of the tenant's identities: configured
(Telegram here), paired (Matrix) or seen (WhatsApp); in a private chat, in a
group, and an update roost does not answer (an edit, no chat: its sender read
from the payload). Bob's rows and room stay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.app.forgetting import forget_in_database
from bridge.channels.telegram.inbox import UpdateInbox
from bridge.core.config_sections import DatabaseSettings
from tests.storage.conftest import OpenDb
from tests.storage.test_inbox_store import NOW, message


async def row(db: Any, source: str, update_id: int, chat: str, text: str) -> None:
    await db.execute(
        "INSERT INTO channel_inbox (source, update_id, chat, msg, payload, state, owner,"
        " received_ms, sent_ms) VALUES (?, ?, ?, ?, ?, 'working', 'p1', 1, 1)",
        (source, update_id, chat, f"m{update_id}", f'{{"text": "{text}"}}'),
    )


async def test_forget_deletes_the_persons_inbox_rows_and_direct_rooms(
    backend: str, location: str, open_db: OpenDb, tmp_path: Path
) -> None:
    db: Any = await open_db()
    telegram = UpdateInbox(db, "telegram:1", "p1", clock=lambda: NOW)
    edited = {"update_id": 4, "edited_message": message(4, 111, "alice's edit")["message"]}
    await telegram.store(
        [
            message(1, 111, "alice's secret"),
            message(2, 111, "alice in a group", chat=-100),
            message(3, 222, "bob's question"),
            edited,
            message(5, 111, "alice, answered"),
        ]
    )
    await telegram.done(5)
    await row(db, "matrix:@bot:hs", 1, "@alice:hs", "alice on matrix")
    await row(db, "matrix:@bot:hs", 2, "!room:hs|@alice:hs", "alice in a room")
    await row(db, "matrix:@bot:hs", 3, "@bob:hs", "bob on matrix")
    await row(db, "whatsapp:99", 1, "4915", "alice on whatsapp")
    await row(db, "whatsapp:99", 2, "4916", "bob on whatsapp")
    for user, room in (("@alice:hs", "!dm1:hs"), ("@bob:hs", "!dm2:hs")):
        await db.execute(
            "INSERT INTO matrix_direct (account, user_id, room_id, updated_ms)"
            " VALUES ('@bot:hs', ?, ?, 1)",
            (user, room),
        )
    await db.execute(
        "INSERT INTO pairing_bindings (channel, identity, tenant, bound_at)"
        " VALUES ('matrix', '@alice:hs', 'alice', 1)"
    )
    await db.execute(
        "INSERT INTO identity_seen (channel, identity, tenant, at)"
        " VALUES ('whatsapp', '4915', 'alice', 1)"
    )
    settings = DatabaseSettings(url=location) if backend == "postgresql" else None
    home = tmp_path if backend == "postgresql" else Path(location).parent
    gone = await forget_in_database(home, "alice", settings, [("telegram", "111")])
    left = await db.fetch_all("SELECT source, chat FROM channel_inbox ORDER BY source, update_id")
    assert [(str(s), str(c)) for s, c in left] == [
        ("matrix:@bot:hs", "@bob:hs"),
        ("telegram:1", "222"),
        ("whatsapp:99", "4916"),
    ]
    assert await db.fetch_all("SELECT user_id FROM matrix_direct") == [("@bob:hs",)]
    assert gone["channel_inbox"] == 7 and gone["matrix_direct"] == 1
    assert gone["pairing_bindings"] == 1  # the tenant's own rows go as before
    again = await forget_in_database(home, "alice", settings, [("telegram", "111")])
    assert again["channel_inbox"] == 0  # a re-run finds nothing more
