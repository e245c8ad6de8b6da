"""`roost access list` and `roost access revoke TENANT|CHANNEL:ID`: who gets in, and ending it.

`list` prints one line per person: the identity, the tenant, how they got
in (`config`: the tenant's `<platform>_ids`; `paired`: a binding, since when)
and when they were last seen (a binding's `last_seen`; for a config-mapped
id, the last message of their private chat). `revoke` removes bindings
(a tenant: all of its bindings) and writes `pairing.revoked` {by: operator}
for each; the daemon reads a paired identity's binding on every message (and
reloads its mirror at the store's notify), so it takes effect on the next
one. A config-mapped id cannot be revoked here: it is named, with
the config key to remove it from. Exit 0 when something was revoked, 1 when
there was nothing to revoke.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import NamedTuple, TextIO

from bridge.app.channels_up import PLATFORMS
from bridge.app.database import open_database
from bridge.app.home import check_chain_key, open_chain, prepare_home
from bridge.cli.rows import Verb, add_verbs, no_args, pick
from bridge.cli.tenant_check import unknown_tenant
from bridge.core.config import Settings, config_source
from bridge.core.identities import listed
from bridge.core.pairing import Binding, PairingStore
from bridge.core.tenants import configured_tenants
from bridge.storage.protocol import Database

AccessRun = Callable[[argparse.Namespace, Settings, TextIO], int]


class Person(NamedTuple):
    identity: str  # "<channel>:<identity>", e.g. "telegram:111111"
    tenant: str
    how: str  # "config" or "paired"
    since: float | None
    last_seen: float | None


def _when(at: float | None) -> str:
    if at is None:
        return "-"
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


async def _private_last_seen(
    db: Database, tenant: str, channel: str, identity: str
) -> float | None:
    """The last message of a config-mapped id's private chat (its chat id is its user id)."""
    found = await db.fetch_value(
        "SELECT max(updated_at) FROM sessions WHERE tenant = ? AND channel = ? AND chat = ?",
        (tenant, channel, identity),
    )
    return None if found is None else float(found)


def _latest(*times: float | None) -> float | None:
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _mapped(settings: Settings) -> list[tuple[str, str, str]]:
    """(tenant, channel, identity) of each config-mapped id, by tenant."""
    return sorted(listed(settings.tenants, PLATFORMS), key=lambda row: row[0])


async def people(settings: Settings, db: Database, store: PairingStore) -> list[Person]:
    """Everyone who gets in: config-mapped ids first (by tenant), then bindings (oldest first).

    LAST SEEN is the identity's last admitted message on any chat (`identity_seen`,
    stamped as it arrives: commands and groups count), else what older data shows
    (the sessions of `db`).
    """
    seen = await store.last_seen()
    mapped = [
        Person(
            f"{ch}:{uid}",
            tid,
            "config",
            None,
            _latest(seen.get((ch, str(uid))), await _private_last_seen(db, tid, ch, uid)),
        )
        for tid, ch, uid in _mapped(settings)
    ]
    paired = [
        Person(
            f"{b.channel}:{b.identity}",
            b.tenant,
            "paired",
            b.bound_at,
            _latest(seen.get((b.channel, b.identity)), b.last_seen),
        )
        for b in await store.bindings()
    ]
    return mapped + paired


async def _people(settings: Settings) -> list[Person]:
    database = await open_database(settings.home / "roost.db", settings.database)
    try:
        return await people(settings, database, PairingStore(database))
    finally:
        await database.aclose()


def run_list(args: argparse.Namespace, settings: Settings, out: TextIO) -> int:
    rows = asyncio.run(_people(settings))
    if not rows:
        print("nobody is mapped or paired (roost pair TENANT issues a code)", file=out)
        return 0
    known = configured_tenants(settings.tenants, settings.local_tenant)
    print("IDENTITY\tTENANT\tHOW\tSINCE\tLAST SEEN", file=out)
    for p in rows:
        since = "config" if p.how == "config" else f"paired {_when(p.since)}"
        how = p.how if p.tenant in known else "ignored"
        print(f"{p.identity}\t{p.tenant}\t{how}\t{since}\t{_when(p.last_seen)}", file=out)
    ignored = sorted({p.tenant for p in rows if p.tenant not in known})
    if ignored:  # a removed tenant's pairings: kept, refused (atk2 s39 #6)
        print(
            f"ignored: paired to tenants {config_source(os.environ)} does not configure"
            f" ({', '.join(ignored)}); they count again if the tenant is configured again,"
            " and `roost access revoke TENANT` removes them",
            file=out,
        )
    return 0


def _config_named(settings: Settings, target: str) -> list[str]:
    """Config-mapped ids the target covers, as `telegram:ID (in [tenants.T] telegram_ids)`."""
    return [
        f"{ch}:{uid} (in [tenants.{tid}] {ch}_ids)"
        for tid, ch, uid in _mapped(settings)
        if target in (tid, f"{ch}:{uid}")
    ]


async def _revoke(pairing: PairingStore, target: str) -> list[Binding]:
    if ":" not in target:
        return await pairing.revoke_tenant(target)
    channel, identity = target.split(":", 1)
    found = [b for b in await pairing.bindings() if (b.channel, b.identity) == (channel, identity)]
    await pairing.revoke(channel, identity)
    return found


async def _revoked(settings: Settings, target: str) -> list[Binding]:
    """Remove the bindings (a running daemon's mirror reloads at the notify), then audit."""
    check_chain_key(settings)  # the record could not follow: nothing is revoked
    database = await open_database(settings.home / "roost.db", settings.database)
    try:
        gone = await _revoke(PairingStore(database), target)
    finally:
        await database.aclose()
    if gone:
        await _audit(settings, gone)
    return gone


async def _audit(settings: Settings, gone: Sequence[Binding]) -> None:
    chain = await open_chain(settings, time.time, PLATFORMS)
    try:
        await chain.emit_many(
            [
                (
                    "pairing.revoked",
                    b.tenant,
                    {"channel": b.channel, "identity": b.identity, "by": "operator"},
                )
                for b in gone
            ]
        )
    finally:
        await chain.aclose()


def run_revoke(args: argparse.Namespace, settings: Settings, out: TextIO) -> int:
    target: str = args.target
    prepare_home(settings.home)
    gone = asyncio.run(_revoked(settings, target))
    for b in gone:
        print(f"revoked {b.channel}:{b.identity} (paired to {b.tenant})", file=out)
    for named in _config_named(settings, target):
        print(f"{named} is mapped in the config: remove it from the config to revoke", file=out)
    if not gone:
        print(f"no pairing to revoke for {target}", file=out)
        if ":" not in target:  # a tenant's name: a typo found nothing to revoke, silently
            unknown = unknown_tenant(
                settings, target, "access revoke", files_do=True, advice="Check the spelling."
            )
            if unknown is not None:
                print(unknown, file=sys.stderr)
    return 0 if gone else 1


def revoke_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", help="a tenant (all its pairings) or CHANNEL:ID, e.g. telegram:1234")


VERBS: tuple[Verb[AccessRun], ...] = (
    Verb("list", "who is mapped or paired, since when, last seen", no_args, run_list),
    Verb("revoke", "remove the pairings of a tenant or one identity", revoke_args, run_revoke),
)


def access_args(p: argparse.ArgumentParser) -> None:
    add_verbs(p, "access_command", VERBS)


def run_access(args: argparse.Namespace, settings: Settings) -> int:
    return pick(VERBS, args.access_command)(args, settings, sys.stdout)
