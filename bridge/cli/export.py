"""`roost export --tenant T` and `roost forget --tenant T --yes`: a person's data.

Export writes a ZIP (mode 0600, never over an existing file); forget deletes
the tenant's files and rows and needs `--yes` (exit 2 without it). Export
may run beside the daemon; forget should run with the daemon stopped (a
running daemon may still hold the person's session in memory).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from bridge.app.export import export_details, forget, forgotten_details, write_export
from bridge.app.home import record_event
from bridge.app.instance import InstanceBusy, hold
from bridge.cli.rows import tenant_arg
from bridge.core.config import Settings
from bridge.core.db import connect
from bridge.core.words import count


def export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, required=True, help="whose data")
    p.add_argument("--out", type=Path, help="the ZIP to write (default roost-export-T-DATE.zip)")


def forget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, required=True, help="whose data to delete")
    p.add_argument("--yes", action="store_true", help="really delete it (no undo)")


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    now = datetime.fromtimestamp(time.time(), UTC)
    out = args.out or Path(f"roost-export-{args.tenant}-{now:%Y%m%d-%H%M%S}.zip")
    if out.exists():
        print(f"roost export: {out} exists; give another --out", file=sys.stderr)
        return 2
    db = connect(settings.home / "roost.db")
    try:
        done = write_export(settings.home, db, args.tenant, out, now.isoformat("T", "seconds"))
    finally:
        db.close()
    asyncio.run(
        record_event(settings, "data.exported", args.tenant, export_details(done, "operator"))
    )
    print(f"exported tenant {args.tenant} to {out} ({count(len(done.names), 'file')}, mode 0600)")
    return 0


def run_forget(args: argparse.Namespace, settings: Settings) -> int:
    if not args.yes:
        print(
            f"roost forget: this deletes every file and database row of tenant "
            f"{args.tenant} (memory, history, tools, vault), with no undo. Export first "
            "(`roost export`), stop the daemon, then run again with --yes.",
            file=sys.stderr,
        )
        return 2
    try:
        lock = hold(settings.home)  # no daemon may write the tenant back meanwhile
    except InstanceBusy as exc:
        print(f"roost forget: {exc}", file=sys.stderr)
        return 1
    db = connect(settings.home / "roost.db")
    try:
        gone = forget(settings.home, db, args.tenant)
        asyncio.run(
            record_event(
                settings, "data.forgotten", args.tenant, forgotten_details(gone, "operator")
            )
        )
    finally:
        db.close()
        lock.release()
    rows = sum(gone.rows.values())
    mcp = f" (among them {', '.join('mcp/' + n for n in gone.mcp)})" if gone.mcp else ""
    print(
        f"forgot tenant {args.tenant}: {count(gone.files, 'file')}{mcp} and "
        f"{count(rows, 'database row')} "
        "deleted; its audit records (no content) remain"
    )
    return 0
