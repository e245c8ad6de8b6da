"""`roost db migrate`'s composition: open the home's SQLite state and the target
PostgreSQL, copy (`bridge.storage.copy`), print what was verified.

Offline (the default) the command refuses while `roost serve` holds the
home (its instance lock): the copy reads roost.db itself, and a daemon
writing meanwhile would leave tables that match neither before nor after.
`--online` copies instead from a consistent snapshot (`Database.backup`,
SQLite's online backup API, into the home, removed afterwards) while the
daemon runs on; the marker then says `snapshot`, and a run after the
daemon stopped copies again the tables that changed since (a table is
copied whole). `--dry-run` opens both and prints row counts, writing
nothing.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator, Sequence
from typing import TextIO

from bridge.app.database import open_database, open_postgres, postgres_url
from bridge.app.instance import held
from bridge.core.config import ConfigError, Settings
from bridge.storage import copy
from bridge.storage import url as db_url
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase

SNAPSHOT = ".migrate-snapshot.db"


class Refused(Exception):
    """The migration cannot run as asked; the message says why and what to do."""


@contextlib.asynccontextmanager
async def home_source(settings: Settings, online: bool) -> AsyncIterator[Database]:
    """The home's roost.db to copy from: itself (migrated, as `roost serve` would) or,
    online, a snapshot of it."""
    path = settings.home / "roost.db"
    if not path.is_file():
        raise Refused(f"no roost.db in {settings.home}: nothing to copy (is ROOST_HOME right?)")
    serving = held(settings.home)
    if serving and not online:
        raise Refused(
            f"roost serve is running on {settings.home}: stop it first (systemctl stop roost), "
            "or copy a snapshot with --online and run again once it is stopped"
        )
    if not online:
        db = await open_database(path)
        try:
            yield db
        finally:
            await db.aclose()
        return
    live = await SqliteDatabase.open(path, readers=0)
    snapshot = settings.home / SNAPSHOT
    try:
        await live.backup(snapshot)
    finally:
        await live.aclose()
    try:
        db = await open_database(snapshot)
        try:
            yield db
        finally:
            await db.aclose()
    finally:
        for name in (SNAPSHOT, SNAPSHOT + "-wal", SNAPSHOT + "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(settings.home / name)


async def open_target(url: str, settings: Settings) -> Database:
    try:
        db_url.check(url)
    except ValueError as exc:
        raise Refused(f"--to {db_url.redact(url)}: {exc}") from None
    try:
        return await open_postgres(url, settings.database)
    except ConfigError as exc:
        raise Refused(str(exc).replace("database.url", "--to", 1)) from None


class Ticker:
    """Progress lines: the first of each table at once, then at most one a second."""

    def __init__(self, out: TextIO) -> None:
        self._out, self._last, self._table = out, 0.0, ""

    def __call__(self, line: str) -> None:
        table = line.split(":", 1)[0]
        now = time.monotonic()
        if table != self._table or now - self._last >= 1.0 or not line.startswith("copying"):
            print(f"  {line}", file=self._out, flush=True)
            self._last, self._table = now, table


def table_of(checks: Sequence[copy.Check]) -> list[str]:
    width = max([len("table"), *(len(c.name) for c in checks)])
    lines = [f"{'table':<{width}}  {'rows':>9}  {'target':>9}  {'hash':<12}  ok"]
    for c in checks:
        verdict = ("ok" if c.ok else "DIFFERS") + (" (copied)" if c.copied else "")
        lines.append(
            f"{c.name:<{width}}  {c.source.rows:>9}  {c.target.rows:>9}  "
            f"{c.source.short():<12}  {verdict}"
        )
    return lines


async def migrate(
    settings: Settings,
    url: str,
    out: TextIO,
    *,
    online: bool,
    dry_run: bool,
    batch: int,
    refresh: Sequence[str] = (),
) -> int:
    """Exit status: 0 all verified, 1 a table differs (or refused, with the reason)."""
    target = await open_target(url, settings)
    try:
        async with home_source(settings, online) as source:
            where = f"{settings.home / 'roost.db'} -> PostgreSQL {db_url.redact(url)}"
            if dry_run:
                return await _dry_run(source, target, where, out)
            print(f"roost db migrate: {where}" + (" (online snapshot)" if online else ""), file=out)
            began = time.monotonic()
            try:
                checks = await copy.copy(
                    source,
                    target,
                    MIGRATIONS,
                    source_name=str(settings.home),
                    snapshot=online,
                    refresh=refresh,
                    batch=batch,
                    progress=Ticker(out),
                )
            except copy.CopyRefused as exc:
                raise Refused(str(exc)) from None
            took = time.monotonic() - began
    finally:
        await target.aclose()
    for line in table_of(checks):
        print(line, file=out)
    rows = sum(c.source.rows for c in checks)
    copied = sum(c.source.rows for c in checks if c.copied)
    bad = [c.name for c in checks if not c.ok]
    print(
        f"{len(checks)} tables and text indexes, {rows} rows; {copied} copied in {took:.1f} s",
        file=out,
    )
    if bad:
        print(f"DIFFERENT after the copy: {', '.join(bad)}", file=out)
        return 1
    then = "once roost serve is stopped, run again" if online else "set [database] url"
    print(f"verified: every table's rows and hash are equal; {then}", file=out)
    return 0


async def _dry_run(source: Database, target: Database, where: str, out: TextIO) -> int:
    print(f"roost db migrate --dry-run: {where}", file=out)
    mine = await copy.row_counts(source)
    version = await target.version()
    theirs = await copy.row_counts(target) if version else {}
    state = await copy.marker(target)
    width = max(len(t) for t in mine)
    print(f"{'table':<{width}}  {'rows':>9}  {'target':>9}", file=out)
    for table, n in mine.items():
        print(f"{table:<{width}}  {n:>9}  {theirs.get(table, '-')!s:>9}", file=out)
    docs: dict[str, int] = {}
    for name, tenant in await source.text_indexes():
        docs[name] = docs.get(name, 0) + await source.text_index(name, tenant).count()
    for name, n in sorted(docs.items()):
        print(f"{'text:' + name:<{width}}  {n:>9}", file=out)
    told = {None: "no copy into it yet", copy.COPYING: "a copy started (will resume)"}
    print(
        f"target: schema version {version or 'none (empty)'}; "
        f"{told.get(state, f'a copy finished ({state})')}; nothing written",
        file=out,
    )
    return 0


def target_url(given: str | None, settings: Settings) -> str:
    """`--to`, else `[database] url` (its password file read)."""
    url = given or postgres_url(settings.database)
    if url is None:
        raise Refused("name the target: --to postgresql://user@host/dbname (or [database] url)")
    return url
