"""`roost forget` takes the person's messages still waiting in a channel's durable inbox.

Bob's Telegram id is configured (`telegram_ids`); a message of his that a
killed daemon left open in `channel_inbox` (its text, kept for the next
start, which would answer it) is there before the forget, none after it;
Alice's stays. Before, the inbox has no tenant column and forget skipped it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, fake, run

__all__ = ["fake"]


def waiting(home: Path) -> list[tuple[str, str]]:
    with contextlib.closing(sqlite3.connect(home / "roost.db", timeout=30)) as conn:
        rows = conn.execute("SELECT chat, payload FROM channel_inbox ORDER BY update_id")
        return [(str(c), str(p)) for c, p in rows.fetchall()]


async def test_forget_deletes_the_persons_waiting_messages(home: Path, fake: FakeOpenAI) -> None:
    config = home.parent / "forget-inbox.toml"
    config.write_text(
        "[tenants.alice]\ntelegram_ids = [111]\n\n[tenants.bob]\ntelegram_ids = [222]\n"
    )
    env = {**env_for(home, fake), "ROOST_CONFIG": str(config)}
    assert (await run(["send", "--tenant", "bob", "hello"], env))[0] == 0  # roost.db made
    with contextlib.closing(sqlite3.connect(home / "roost.db", timeout=30)) as conn, conn:
        for update_id, chat, text in ((1, "222", "bob's secret plan"), (2, "111", "alice's")):
            conn.execute(
                "INSERT INTO channel_inbox (source, update_id, chat, msg, payload, state, owner,"
                " received_ms, sent_ms) VALUES ('telegram:42', ?, ?, '5', ?, 'working', 'gone',"
                " 1, 1)",
                (update_id, chat, f'{{"text": "{text}"}}'),
            )
    code, _, err = await run(["forget", "--tenant", "bob", "--yes"], env)
    assert code == 0, err
    assert waiting(home) == [("111", '{"text": "alice\'s"}')]  # bob's message is gone
