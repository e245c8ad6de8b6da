"""The Telegram durable inbox on the `Database` protocol against its old statements on
bare sqlite3.

One cycle is what the inbox costs one `getUpdates` answer of `--batch` updates
(default 1, as a chat's messages mostly come): before the port, `store` (BEGIN
IMMEDIATE, one executemany INSERT, COMMIT), then per update `claim` (one
UPDATE) and `done` (one UPDATE), called on a `sqlite3.Connection` on the event
loop (the floor); after it, `UpdateInbox.store` (ONE multi-row INSERT ...
RETURNING), `take` (no statement: the store said which updates this process
stored) and `done` (one UPDATE) per update, on `SqliteDatabase` (a thread hop
per statement, off the loop) and on `PostgresDatabase` against a throwaway
server on 127.0.0.1 (skipped when PostgreSQL is not installed). The variants
take turns (`bench.outbox_store.interleaved`) and each reports its median
round; the figures are ratios to the floor measured in the same run, with
the load average. The per-statement column divides by the ported path's
statements per cycle (1 + batch).

Run: .venv/bin/python -m bench.inbox_store [--batch 1] [--n 2000] [--rounds 10] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.outbox_store import Cycle, opened, print_cycles, three_ways
from bridge.channels.telegram.inbox import UpdateInbox, describe
from bridge.core import db as core_db
from bridge.storage.protocol import Database

NOW = 1_800_000_000.0
SOURCE = "telegram:bench"


def update(update_id: int) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": int(NOW) - 1,
            "chat": {"id": 5_000_000, "type": "private"},
            "from": {"id": 5_000_000, "is_bot": False, "first_name": "b"},
            "text": f"ping {update_id}",
        },
    }


def batch_of(i: int, batch: int) -> list[dict[str, Any]]:
    return [update(i * batch + k + 1) for k in range(batch)]


@asynccontextmanager
async def direct(path: Path, batch: int) -> AsyncIterator[Cycle]:
    """The inbox as it was before the port: its statements on the loop (the floor)."""
    conn = core_db.connect(path)
    now = int(NOW * 1000)

    async def cycle(i: int) -> None:
        updates = batch_of(i, batch)
        rows = []
        for u in updates:
            chat, msg, sent = describe(u)
            payload = json.dumps(u, separators=(",", ":"), ensure_ascii=False)
            rows.append((SOURCE, u["update_id"], chat, msg, payload, now, sent or now))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO channel_inbox (source, update_id, chat, msg, payload, state,"
            " received_ms, sent_ms) VALUES (?, ?, ?, ?, ?, 'new', ?, ?)"
            " ON CONFLICT (source, update_id) DO NOTHING",
            rows,
        )
        conn.execute("COMMIT")
        for u in updates:
            conn.execute(
                "UPDATE channel_inbox SET state = 'working', owner = ?"
                " WHERE source = ? AND update_id = ? AND state = 'new'",
                ("bench", SOURCE, u["update_id"]),
            )
            conn.execute(
                "UPDATE channel_inbox SET state = ?, payload = '', done_ms = ?"
                " WHERE source = ? AND update_id = ?",
                ("done", now, SOURCE, u["update_id"]),
            )

    try:
        yield cycle
    finally:
        conn.close()


def store_cycle(db: Database, batch: int) -> Cycle:
    inbox = UpdateInbox(db, SOURCE, "bench", clock=lambda: NOW)

    async def cycle(i: int) -> None:
        updates = batch_of(i, batch)
        await inbox.store(updates)
        for u in updates:
            if inbox.take(u["update_id"]):
                await inbox.done(u["update_id"])

    return cycle


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="cycles per variant")
    parser.add_argument("--rounds", type=int, default=10, help="turns the variants take")
    parser.add_argument("--batch", type=int, default=1, help="updates per getUpdates answer")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = parser.parse_args()
    if args.quick:
        args.n, args.rounds = 20, 1
    print(f"load average before: {os.getloadavg()}")
    got = await three_ways(
        "UpdateInbox",
        "inbox",
        lambda path: direct(path, args.batch),
        lambda path: opened(path, lambda db: store_cycle(db, args.batch)),
        lambda url, _tmp: opened(url, lambda db: store_cycle(db, args.batch)),
        args.n,
        args.rounds,
    )
    statements = 1 + args.batch
    title = (
        f"inbox cycle = one getUpdates answer of {args.batch} update(s): store, then take"
        f" and done each ({statements} statements through the store)"
    )
    print_cycles(title, got, statements)


if __name__ == "__main__":
    asyncio.run(main())
