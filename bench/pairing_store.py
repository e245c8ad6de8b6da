"""The pairing store (who is allowed in) on the `Database` protocol against the same
statements on bare sqlite3.

`--path admit` (the default) is what every message costs the access check
beyond the configured ids: a paired person's message (`seen`: one SELECT of
the binding; last_seen is written at most once a minute, here never) and a
message of a stranger who was already told (`seen`, then the refusal
notice's INSERT ... ON CONFLICT DO NOTHING): three statements. `--path
redeem` is one pairing's life: `issue` (the expired-codes DELETE, the code's
INSERT) and `redeem` (the lockout SELECT, the claiming UPDATE ... RETURNING,
the binding's upsert, two DELETEs of stranger rows): seven statements, and
through the store an eighth the floor does not run (the `pairing` notify).

Columns: the same statements called directly on a `sqlite3.Connection` on
the event loop (the floor: how the store ran before the port),
`PairingStore` on `SqliteDatabase` (a thread hop per statement, off the
loop) and on `PostgresDatabase` against a throwaway server on 127.0.0.1
(skipped when PostgreSQL is not installed). The variants take turns
(`bench.outbox_store.interleaved`) and each reports its median round; the
figures are ratios to the floor measured in the same run, with the load.

Run: .venv/bin/python -m bench.pairing_store [--path admit|redeem] [--n 2000] [--rounds 10]
[--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bench.outbox_store import Cycle, opened, print_cycles, three_ways
from bridge.core import db as core_db
from bridge.core.pairing import CODE_TTL_S, PairingStore, code_hash
from bridge.storage.protocol import Database

STATEMENTS = {"admit": 3, "redeem": 7}  # per cycle, the floor's
NOW = 1_800_000_000.0
PAIRED, STRANGER = "1001", "2002"


def codes(i: int) -> str:
    """The i-th code, distinct for every i (8 characters of the alphabet)."""
    digits = "ABCDEFGH"
    return "".join(digits[(i >> (3 * k)) & 7] for k in range(8))


@asynccontextmanager
async def direct(path: Path, which: str) -> AsyncIterator[Cycle]:
    """The same statements on `bridge.core.db`'s connection, on the loop (the floor)."""
    conn = core_db.connect(path)
    conn.execute(
        "INSERT INTO pairing_bindings (channel, identity, tenant, bound_at, last_seen)"
        " VALUES ('telegram', ?, 'bob', ?, ?)",
        (PAIRED, NOW, NOW),
    )
    conn.execute(
        "INSERT INTO refusal_notices (channel, identity, at, seq) VALUES ('telegram', ?, ?, 1)",
        (STRANGER, NOW),
    )
    seen = "SELECT tenant, last_seen FROM pairing_bindings WHERE channel = ? AND identity = ?"

    async def admit(i: int) -> None:
        conn.execute(seen, ("telegram", PAIRED)).fetchone()
        conn.execute(seen, ("telegram", STRANGER)).fetchone()
        conn.execute(
            "INSERT INTO refusal_notices (channel, identity, at, seq) VALUES (?, ?, ?,"
            " (SELECT COALESCE(max(seq), 0) + 1 FROM refusal_notices))"
            " ON CONFLICT (channel, identity) DO NOTHING",
            ("telegram", STRANGER, NOW),
        )

    async def redeem(i: int) -> None:
        who, digest = f"p{i}", code_hash(codes(i))
        conn.execute("DELETE FROM pairing_codes WHERE expires_at < ?", (NOW - 86400,))
        conn.execute(
            "INSERT INTO pairing_codes (code_hash, tenant, created_at, expires_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (code_hash) DO NOTHING",
            (digest, "bob", NOW, NOW + CODE_TTL_S),
        )
        conn.execute(
            "SELECT locked_until FROM pairing_failures WHERE channel = ? AND identity = ?",
            ("telegram", who),
        ).fetchone()
        conn.execute(
            "UPDATE pairing_codes SET used_at = ?, used_by = ? WHERE code_hash = ?"
            " AND used_at IS NULL AND expires_at >= ? RETURNING tenant",
            (NOW, f"telegram:{who}", digest, NOW),
        ).fetchone()
        conn.execute(
            "INSERT INTO pairing_bindings (channel, identity, tenant, bound_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (channel, identity) DO UPDATE SET"
            " tenant = excluded.tenant, bound_at = excluded.bound_at, last_seen = NULL",
            ("telegram", who, "bob", NOW),
        )
        for table in ("pairing_failures", "refusal_notices"):
            conn.execute(
                f"DELETE FROM {table} WHERE channel = ? AND identity = ?", ("telegram", who)
            )

    try:
        yield admit if which == "admit" else redeem
    finally:
        conn.close()


async def store_cycle(db: Database, which: str) -> Cycle:
    drawn = {"code": iter(codes(8**8 - 1))}  # issue draws the floor's codes: the same work
    store = PairingStore(db, clock=lambda: NOW, rand=lambda alphabet: next(drawn["code"]))
    if which == "admit":
        await store.redeem("telegram", PAIRED, await store.issue("bob"))
        await store.seen("telegram", PAIRED)  # last_seen now: not written again
        await store.should_refuse_loudly("telegram", STRANGER)

        async def admit(i: int) -> None:
            await store.seen("telegram", PAIRED)
            await store.seen("telegram", STRANGER)
            await store.should_refuse_loudly("telegram", STRANGER)

        return admit

    async def redeem(i: int) -> None:
        drawn["code"] = iter(codes(i))
        await store.redeem("telegram", f"p{i}", await store.issue("bob"))

    return redeem


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="cycles per variant")
    parser.add_argument("--rounds", type=int, default=10, help="turns the variants take")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    parser.add_argument("--path", choices=tuple(STATEMENTS), default="admit")
    args = parser.parse_args()
    if args.quick:
        args.n, args.rounds = 20, 1
    print(f"load average before: {os.getloadavg()}")
    got = await three_ways(
        "PairingStore",
        "pairing",
        lambda path: direct(path, args.path),
        lambda path: opened(path, lambda db: store_cycle(db, args.path)),
        lambda url, _tmp: opened(url, lambda db: store_cycle(db, args.path)),
        args.n,
        args.rounds,
    )
    statements = STATEMENTS[args.path]
    what = (
        "admit = a paired person's message + an already-told stranger's"
        if args.path == "admit"
        else "redeem = issue + redeem"
    )
    print_cycles(f"{what} ({statements} statements on the floor)", got, statements)


if __name__ == "__main__":
    asyncio.run(main())
