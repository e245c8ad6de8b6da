"""`roost export --tenant T` and `roost forget --tenant T --yes`: a person's data.

Export writes a ZIP (mode 0600, never over an existing file) into the home's
`exports/` (0700) unless `--out PATH` names another place (its folder must
exist: exit 2 otherwise), and prints the full path it wrote. Forget deletes
the tenant's files and rows and needs `--yes` (exit 2 without it); it runs
with the daemon stopped (it takes the home's instance lock) and is resumable
(`bridge.app.forgetting`): a run that was killed is finished by running it
again, and until then the daemon serves the tenant nothing and `roost doctor`
says so.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from bridge.app.channels_up import PLATFORMS
from bridge.app.database import open_database
from bridge.app.export import (
    Exported,
    Forgotten,
    export_details,
    forgotten_details,
    write_export,
)
from bridge.app.forget_marks import marker_path
from bridge.app.forgetting import EXPORTS, begin, export_files, forget_tenant
from bridge.app.home import check_chain_key, record_event
from bridge.app.instance import LOCK_NAME, InstanceBusy, hold, holder
from bridge.cli.rows import tenant_arg
from bridge.cli.tenant_check import refused, unknown_tenant
from bridge.core.config import Settings
from bridge.core.identities import listed
from bridge.core.words import count
from bridge.types.file_tree import TRIES, TreeChanged

NOTHING_TO_FORGET = "Nothing was deleted: check the name against the known ones."


def export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, required=True, help="whose data")
    p.add_argument(
        "--out",
        type=Path,
        help="the ZIP to write (default: $ROOST_HOME/exports/roost-export-T-DATE.zip)",
    )


FORGET_STEPS = """There is no undo: `roost export --tenant T` first for a copy, and stop the
daemon (forget refuses while a `roost serve` holds the home). Without --yes it
only says what it would delete (exit 2). A run that was killed is finished by
running it again. Audit records (content-free) stay; T's ZIPs in exports/ too."""


def forget_args(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # the epilog's lines as written
    p.epilog = FORGET_STEPS
    p.add_argument("--tenant", type=tenant_arg, required=True, help="whose data to delete")
    p.add_argument("--yes", action="store_true", help="really delete it (no undo)")


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    refusal = unknown_tenant(settings, args.tenant, "export", files_do=True)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    check_chain_key(settings)  # its record could not follow the ZIP: none is written
    now = datetime.fromtimestamp(time.time(), UTC)
    out = args.out or default_out(settings, args.tenant, now)
    out = out.absolute()
    if out.is_dir():
        example = out / export_name(args.tenant, now)
        print(
            f"roost export: {out} is a folder; give a file name in it, e.g. --out {example}",
            file=sys.stderr,
        )
        return 2
    if out.exists():
        print(f"roost export: {out} exists; give another --out", file=sys.stderr)
        return 2
    if not out.parent.is_dir():
        print(
            f"roost export: the folder {out.parent} does not exist (or is not a folder); "
            "make it first or give another --out",
            file=sys.stderr,
        )
        return 2

    async def export() -> Exported:
        db = await open_database(settings.home / "roost.db", settings.database)
        try:
            done = await write_export(
                settings.home, db, args.tenant, out, now.isoformat("T", "seconds")
            )
        finally:
            await db.aclose()
        details = export_details(done, "operator")
        await record_event(settings, "data.exported", args.tenant, details, PLATFORMS)
        return done

    try:
        done = asyncio.run(export())
    except TreeChanged:
        print(
            f"roost export: folders of tenant {args.tenant} kept moving while they were read "
            f"({TRIES} tries; the daemon's tools at work?); nothing written, run it again",
            file=sys.stderr,
        )
        return 1
    # the counts `/export` gives the person (their files, rows, records), then the ZIP's
    print(
        f"exported tenant {args.tenant} to {out} (mode 0600): {count(done.files, 'file')}, "
        f"{count(done.rows, 'database row')} and {count(done.audit, 'audit record')}, in "
        f"{count(len(done.names), 'ZIP entry', 'ZIP entries')}"
    )
    return 0


def default_out(settings: Settings, tenant: str, now: datetime) -> Path:
    """`exports/roost-export-T-DATE.zip` in the home (the folder made 0700)."""
    folder = settings.home / EXPORTS
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.chmod(0o700)
    return folder / export_name(tenant, now)


def export_name(tenant: str, now: datetime) -> str:
    """The ZIP's default file name: `roost-export-T-DATE.zip`."""
    return f"roost-export-{tenant}-{now:%Y%m%d-%H%M%S}.zip"


def busy_message(home: Path) -> str:
    """Why forget cannot run now: a daemon holds the home (the lock's message is the second
    daemon's, whose advice of another ROOST_HOME means nothing for a tenant of this one)."""
    try:
        fd = os.open(home / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        who = "a process"
    else:
        try:
            who = holder(fd)
        finally:
            os.close(fd)
    return (
        f"roost forget: a roost serve ({who}) is running on {home}, and forget needs the home "
        "to itself (the daemon could write the tenant back): stop it first (systemctl stop "
        "roost; on PostgreSQL every instance sharing this home), then run roost forget "
        "again. Nothing was deleted."
    )


def run_forget(args: argparse.Namespace, settings: Settings) -> int:
    unfinished = marker_path(settings.home, args.tenant).exists()  # its files may be gone
    if not unfinished and refused(settings, args.tenant, "forget", advice=NOTHING_TO_FORGET):
        return 2
    if not args.yes:
        print(
            f"roost forget: this deletes every file and database row of tenant "
            f"{args.tenant} (memory, history, tools, vault), with no undo. Export first "
            "(`roost export`), stop the daemon, then run again with --yes.",
            file=sys.stderr,
        )
        return 2
    check_chain_key(settings)  # its record could not follow: nothing is deleted
    try:
        lock = hold(settings.home)  # no daemon may write the tenant back meanwhile
    except InstanceBusy:
        print(busy_message(settings.home), file=sys.stderr)
        return 1
    resumed = marker_path(settings.home, args.tenant).exists()
    begin(settings.home, args.tenant)  # durable, before the database or a file is touched

    async def record(gone: Forgotten) -> None:
        details = forgotten_details(gone, "operator")
        await record_event(settings, "data.forgotten", args.tenant, details, PLATFORMS)

    try:
        mine = [(c, i) for t, c, i in listed(settings.tenants, PLATFORMS) if t == args.tenant]
        gone = asyncio.run(
            forget_tenant(settings.home, args.tenant, record, settings.database, mine)
        )
    finally:
        lock.release()
    rows = sum(gone.rows.values())
    mcp = f" (among them {', '.join('mcp/' + n for n in gone.mcp)})" if gone.mcp else ""
    again = " (an interrupted run finished)" if resumed else ""
    print(
        f"forgot tenant {args.tenant}{again}: {count(gone.files, 'file')}{mcp} and "
        f"{count(rows, 'database row')} "
        "deleted; its audit records (no content) remain"
    )
    for path in export_files(settings.home, args.tenant):
        print(f"an export of {args.tenant} remains: {path} (delete it once handed over)")
    return 0
