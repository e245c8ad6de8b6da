"""`roost db migrate`: copy the home's SQLite state into PostgreSQL, verified.

`roost db migrate --to postgresql://user@host/dbname [--online] [--dry-run]`
copies every table of roost.db and its text indexes into the target (empty,
or partly filled by an earlier run that was stopped), then prints per table
the rows, the hash and whether both sides are equal
(`bridge.app.db_migrate`, `bridge.storage.copy`). Without `--to`, the
target is `[database] url`. After a finished copy a run only verifies; `--refresh
TABLE,...` copies those tables again (tables roost.db still serves while
their store is not ported). A password on the command line shows in `ps`:
prefer `[database] password_file`, `PGPASSWORD` or `~/.pgpass`. Exit 0 when
every table verified, 1 when one differs or the copy was refused (the
reason on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import TextIO

from bridge.app.db_migrate import Refused, migrate, target_url
from bridge.cli.rows import Verb, add_verbs, pick
from bridge.core.config import Settings
from bridge.storage import copy

DbRun = Callable[[argparse.Namespace, Settings, TextIO], int]


def _batch(value: str) -> int:
    n = int(value)
    if not 1 <= n <= 100_000:
        raise argparse.ArgumentTypeError("between 1 and 100000")
    return n


def migrate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--to",
        metavar="URL",
        help="the PostgreSQL database, postgresql://user@host[:port]/dbname "
        "(default: [database] url)",
    )
    p.add_argument(
        "--online",
        action="store_true",
        help="copy a snapshot while roost serve runs (run again once it is stopped)",
    )
    p.add_argument("--dry-run", action="store_true", help="print row counts, write nothing")
    p.add_argument(
        "--refresh",
        metavar="TABLE,...",
        type=lambda v: [t.strip() for t in v.split(",") if t.strip()],
        default=[],
        help="after a finished copy, copy these tables again (ones roost.db still serves)",
    )
    p.add_argument(
        "--batch", type=_batch, default=copy.BATCH, help=f"rows per insert (default {copy.BATCH})"
    )


def run_migrate(args: argparse.Namespace, settings: Settings, out: TextIO) -> int:
    try:
        url = target_url(args.to, settings)
        return asyncio.run(
            migrate(
                settings,
                url,
                out,
                online=args.online,
                dry_run=args.dry_run,
                batch=args.batch,
                refresh=args.refresh,
            )
        )
    except Refused as exc:
        print(f"roost db migrate: {exc}", file=sys.stderr)
        return 1


VERBS: tuple[Verb[DbRun], ...] = (
    Verb("migrate", "copy the home's state into PostgreSQL, verified", migrate_args, run_migrate),
)


def db_args(p: argparse.ArgumentParser) -> None:
    add_verbs(p, "db_command", VERBS)


def run_db(args: argparse.Namespace, settings: Settings) -> int:
    return pick(VERBS, args.db_command)(args, settings, sys.stdout)
