"""Operator commands over the schedule: `roost jobs` and `roost send --to`.

`roost jobs [--tenant T]` lists jobs (id, kind, chat, state, next run in the
job's zone (none for a paused job), runs, the last error) and the outbox's delivery failures (dead
letters and entries still retrying), never a job's text. `roost send --to
CHANNEL:CHAT TEXT` (the forms the platforms declare: `telegram:<chat_id>`,
`web[:<chat>]`, `whatsapp:<phone>`, ...) stores the message in the outbox of
roost.db, filed under the tenant whose `<platform>_ids` lists that chat (else
the local one), where the running daemon picks it up within a second
(it watches the database) and delivers it with its retries; `--key K` makes
a script's retry safe (a key is delivered at most once per chat). The message
is queued either way (exit 0), and stderr warns when nothing will deliver it yet
(no `roost serve` runs) or nobody can read it (a web message for a tenant
without a `web_token`).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
import uuid
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from bridge.app.channel_config import last_served, off_reason
from bridge.app.channels_up import PLATFORMS
from bridge.app.database import open_database
from bridge.app.instance import held
from bridge.channels.terminal.controls import shown
from bridge.cli.rows import tenant_arg
from bridge.cli.tenant_check import known, refused
from bridge.core.config import Settings
from bridge.core.identities import tenant_of
from bridge.loadout.vault import masker_of
from bridge.schedule.jobs import Job, JobLimits
from bridge.schedule.outbox import Enqueued, OutboxEntry, OutboxStore
from bridge.schedule.service import ScheduleService
from bridge.storage.protocol import Database
from bridge.types.masked import Masked
from bridge.types.platform import Platforms
from bridge.types.tenant_dirs import TenantDirs

MAX_TEXT = 16_000
KEY = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")


def when(ms: int | None, tz: str) -> str:
    if ms is None:
        return "-"
    try:
        zone = ZoneInfo(tz)
    except (KeyError, ValueError):
        zone = ZoneInfo("UTC")
    return datetime.fromtimestamp(ms / 1000, UTC).astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def job_line(job: Job) -> str:
    error = f"\terror: {job.last_error}" if job.last_error else ""
    every = f"every {job.spec}" if job.spec else "once"
    # a paused job keeps its old time, which is not when it runs (resuming sets a new one)
    nxt = "none (paused)" if job.state == "paused" else when(job.next_run_ms, job.tz)
    return (
        f"{job.tenant}\t{job.id}\t{job.kind}\t{job.channel}:{job.chat}\t{job.state}\t"
        f"{every}\tnext {nxt}\truns {job.runs}{error}"
    )


def failure_line(entry: OutboxEntry) -> str:
    state = "dead" if entry.state == "dead" else f"retrying ({entry.state})"
    return (
        f"{entry.tenant}\tentry {entry.id}\t{entry.channel}:{entry.chat}\t{state}\t"
        f"attempts {entry.attempts}\t{entry.last_error}\t{entry.key}"
    )


def jobs_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, help="one tenant (default: all)")


async def tenants_of(db: Database, tenant: str | None) -> list[str]:
    if tenant is not None:
        return [tenant]
    rows = await db.fetch_all("SELECT tenant FROM jobs UNION SELECT tenant FROM outbox ORDER BY 1")
    return [str(row[0]) for row in rows]


async def listing(settings: Settings, tenant: str | None) -> tuple[list[Job], list[OutboxEntry]]:
    """Every job of the tenants (finished ones too) and the outbox's delivery failures."""
    db = await open_database(settings.home / "roost.db", settings.database)
    try:
        service = ScheduleService(db, JobLimits(), settings.schedule.timezone)
        tenants = await tenants_of(db, tenant)
        jobs = [job for t in tenants for job in await service.jobs.list_jobs(t, done=True)]
        failures = [e for t in tenants for e in await service.outbox.failures(t)]
    finally:
        await db.aclose()
    return jobs, failures


async def held_tenants(settings: Settings) -> list[str]:
    """The tenants with jobs or outbox entries in the home's database (none: no database)."""
    if settings.database.url is None and not (settings.home / "roost.db").is_file():
        return []
    db = await open_database(settings.home / "roost.db", settings.database)
    try:
        return await tenants_of(db, None)
    finally:
        await db.aclose()


def run_jobs(args: argparse.Namespace, settings: Settings) -> int:
    if not known(settings, args.tenant) and refused(  # a typo listed "no jobs"
        settings, args.tenant, "jobs", asyncio.run(held_tenants(settings))
    ):
        return 2
    if not (settings.home / "roost.db").is_file():
        print("roost: no database yet (the daemon has not run)", file=sys.stderr)
        return 1
    jobs, failures = asyncio.run(listing(settings, args.tenant))
    print(shown("\n".join(job_line(j) for j in jobs)) if jobs else "no jobs")
    if failures:
        print(f"\ndelivery failures ({len(failures)}):")
        print(shown("\n".join(failure_line(e) for e in failures)))  # errors a platform sent
    return 0


def target_of(text: str, platforms: Platforms = PLATFORMS) -> tuple[str, str] | None:
    """(channel, chat) from a `--to` value, as its platform reads it; None when malformed."""
    return platforms.target(text)


def tenant_for(
    settings: Settings,
    channel: str,
    chat: str,
    given: str | None,
    platforms: Platforms = PLATFORMS,
) -> str:
    """The tenant the message is filed under: given, the one whose `<platform>_ids`
    lists the chat's person, or the local one."""
    if given is not None:
        return given
    platform = platforms.get(channel)
    identity = platform.identity_of_chat(chat) if platform is not None else None
    if identity is not None:
        tenant = tenant_of(settings.tenants, platforms, channel, identity)
        if tenant is not None:
            return tenant
    return settings.local_tenant


async def enqueue(
    settings: Settings, where: tuple[str, str, str], masked: Masked, key: str
) -> tuple[Enqueued, bool | None]:
    """Store one message in roost.db's outbox (the file is made and migrated if new); with
    whether a daemon serves it now (`serving`)."""
    db = await open_database(settings.home / "roost.db", settings.database)
    try:
        tenant, channel, chat = where
        now_ms = int(time.time() * 1000)
        added = await OutboxStore(db).enqueue(tenant, channel, chat, masked, key, now_ms=now_ms)
        return added, await serving(settings, db)
    finally:
        await db.aclose()


async def serving(settings: Settings, db: Database) -> bool | None:
    """Whether a `roost serve` delivers the outbox now: the home's lock on SQLite, a live
    instance lease on PostgreSQL (its instances may run on other hosts); None: cannot tell."""
    if settings.database.url is None:
        return held(settings.home)
    from bridge.storage.copy import live_instances  # PostgreSQL only

    return bool(await live_instances(db))


NOT_SERVING = (
    "roost send: warning: `roost serve` is not running now, so nothing delivers this yet: "
    "start it (`make run`, or `systemctl start roost`); the message waits in the outbox "
    "until then"
)


def unread_warning(settings: Settings, tenant: str, channel: str) -> str | None:
    """Why nobody can read a `web` message filed under `tenant`, or None: a tenant other
    than the local one reads the page only through its own `[tenants.T] web_token`."""
    if channel != "web" or tenant == settings.local_tenant:
        return None
    rule = settings.tenants.get(tenant)
    if rule is not None and rule.web_token is not None:
        return None
    return (
        f"roost send: warning: tenant {tenant} has no web_token, so no web page signs in as "
        f"{tenant} and nobody reads this there: set [tenants.{tenant}] web_token in the config "
        f"(it then shows in {tenant}'s web chat), or send it without --tenant (the local "
        "tenant's page)"
    )


def send_to_refusal(
    given: str, target: tuple[str, str] | None, text: str, platforms: Platforms = PLATFORMS
) -> str | None:
    """What is wrong with a `--to` and its text, or None. Each fault is named: one line
    listing the forms and the length together left a newcomer's `--to web:` or typo
    (`--to telgram:1`) to guess which part was refused."""
    if target is None:
        forms = " or ".join(platforms.addresses())
        return f"--to {given!r} is not a target: give {forms}"
    if not text:
        return "the message is empty"
    if len(text) > MAX_TEXT:
        return f"the message is {len(text):,} characters; at most {MAX_TEXT:,} go with --to"
    return None


def send_to(args: argparse.Namespace, settings: Settings, platforms: Platforms = PLATFORMS) -> int:
    """Store the message in the outbox for the running daemon; exit 2 on bad input or a
    channel that is not configured (`channel_config.off_reason`: nothing could deliver it),
    neither here nor in the daemon's last start (its secrets may be its own)."""
    target = target_of(args.to, platforms)
    text = " ".join(args.text).strip()
    wrong = send_to_refusal(args.to, target, text, platforms)
    if wrong is not None or target is None:
        print(f"roost send: {wrong}", file=sys.stderr)
        return 2
    if args.key is not None and not KEY.fullmatch(args.key):
        print("roost send: --key: 1-100 of A-Z a-z 0-9 _ . : -", file=sys.stderr)
        return 2
    channel, chat = target
    off = off_reason(settings, channel)
    if off is not None and channel not in last_served(settings.home):
        # queued, it would wait for a channel that never starts
        print(
            f"roost send: cannot send to {channel}:{chat}: {off}; nothing was queued",
            file=sys.stderr,
        )
        return 2
    tenant = tenant_for(settings, channel, chat, args.tenant, platforms)
    key = f"send:{args.key or uuid.uuid4().hex}"
    masked = masker_of(TenantDirs.of(settings.home, tenant)).mask(text)  # the outbox's type
    added, served = asyncio.run(enqueue(settings, (tenant, channel, chat), masked, key))
    note = "queued" if added.new else "already queued (same key), nothing added"
    print(f"outbox entry {added.id} for {channel}:{chat}: {note}")
    unread = unread_warning(settings, tenant, channel)
    if unread is not None:
        print(unread, file=sys.stderr)
    if served is False:
        print(NOT_SERVING, file=sys.stderr)
    return 0
