"""A turn's session work on the `Database` protocol against the same statements on bare
sqlite3.

One cycle is what every turn costs the session store: `load` of a chat whose
history is cached (the store's one SELECT: the row, no messages) and `append`
of the person's message and the answer (the store's one unit: the row's
upsert `... RETURNING`, the two messages). Chats rotate over 20, as in
`bench/turn.py`.

Columns: the statements the store ran before the port, called directly on
a `sqlite3.Connection` on the event loop (the floor: the row's SELECT, then
BEGIN IMMEDIATE, `UPDATE sessions ... RETURNING`, the messages' INSERTs,
COMMIT), `SessionStore` on `SqliteDatabase` (two thread hops: a reader's
SELECT, the writer's one job) and on `PostgresDatabase` against a throwaway
server on 127.0.0.1 (a round trip per statement, BEGIN and COMMIT too;
skipped when PostgreSQL is not installed). The variants take turns
(`bench.outbox_store.interleaved`) and each reports its median round; the
figures are ratios to the floor measured in the same run, with the load.

Run: .venv/bin/python -m bench.session_store [--n 2000] [--rounds 10] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bench.outbox_store import Cycle, print_cycles, three_ways
from bridge.core import db as core_db
from bridge.core.sessions import SessionKey, SessionStore
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from tests.masking import m
from tests.sessions_kit import store_on

STATEMENTS = 5  # the floor's per cycle: SELECT, BEGIN, UPDATE ... RETURNING, INSERT x2 (one
# executemany), COMMIT; counted as the store counts them before the port, BEGIN/COMMIT aside
CHATS = 20


def key(i: int) -> SessionKey:
    return SessionKey("t", "web", f"c{i % CHATS}")


@asynccontextmanager
async def direct(path: Path) -> AsyncIterator[Cycle]:
    """The store's statements before the port, on the loop (the floor)."""
    conn = core_db.connect(path)
    for i in range(CHATS):
        conn.execute(
            "INSERT INTO sessions (tenant, channel, chat, started_at, updated_at) VALUES"
            " ('t', 'web', ?, 1, 1)",
            (key(i).chat,),
        )

    async def cycle(i: int) -> None:
        args = ("t", "web", key(i).chat)
        conn.execute(
            "SELECT started_at, updated_at, turns, dropped, chars, summary, summary_turns"
            " FROM sessions WHERE tenant=? AND channel=? AND chat=?",
            args,
        ).fetchone()
        conn.execute("BEGIN IMMEDIATE")
        (turn,) = conn.execute(
            "UPDATE sessions SET updated_at=?, turns=turns+1, chars=chars+? WHERE tenant=?"
            " AND channel=? AND chat=? RETURNING turns",
            (float(i), 10, *args),
        ).fetchall()[0]
        conn.executemany(
            "INSERT INTO session_messages (tenant, channel, chat, turn, role, content,"
            " tool_calls, tool_call_id, msg_id, at, meta) VALUES (?, ?, ?, ?, ?, ?, '', '', ?,"
            " ?, '')",
            [(*args, turn, r, f"{r} {i}", str(i), float(i)) for r in ("user", "assistant")],
        )
        conn.execute("COMMIT")

    try:
        yield cycle
    finally:
        conn.close()


async def store_cycle(db: Database) -> Cycle:
    store: SessionStore = store_on(db, 10**9, 10.0**9)

    async def cycle(i: int) -> None:
        await store.load(key(i), float(i))
        await store.append(key(i), m(f"user {i}"), m(f"assistant {i}"), str(i), float(i))

    for i in range(CHATS):  # every chat's history cached, as in a running daemon
        await cycle(i)
    return cycle


@asynccontextmanager
async def on_sqlite(path: Path) -> AsyncIterator[Cycle]:
    db = await SqliteDatabase.open(path, readers=1)
    await db.migrate(MIGRATIONS)
    try:
        yield await store_cycle(db)
    finally:
        await db.aclose()


@asynccontextmanager
async def on_postgres(url: str) -> AsyncIterator[Cycle]:
    db = await PostgresDatabase.open(url)
    await db.migrate(MIGRATIONS)
    try:
        yield await store_cycle(db)
    finally:
        await db.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="cycles per variant")
    parser.add_argument("--rounds", type=int, default=10, help="turns the variants take")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = parser.parse_args()
    if args.quick:
        args.n, args.rounds = 20, 1
    print(f"load average before: {os.getloadavg()}")
    got = await three_ways(
        "SessionStore",
        "sessions",
        direct,
        on_sqlite,
        lambda url, tmp: on_postgres(url),
        args.n,
        args.rounds,
    )
    print_cycles(
        f"a turn's load (cached) + append ({STATEMENTS} statements on the floor)", got, STATEMENTS
    )


if __name__ == "__main__":
    asyncio.run(main())
