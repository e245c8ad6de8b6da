"""`roost pair TENANT`: a one-time code that binds a chat identity to a configured tenant.

The person sends the code to a chat bot (Telegram, WhatsApp, Matrix: the platforms
whose people the config lists, `<platform>_ids`). It opens what a code needs (the
database, the audit chain, the tenant's folders), not a whole roost (`build()`, whose
capabilities cost most of a command's start), and does what a start does to the
pairings first: bindings to tenants this configuration does not have are named in a
WARNING, never removed (`warn_unconfigured`). With none configured here nor
started by the last `roost serve` (`channel_config.last_served`: the daemon may hold a
secret this shell lacks), the code is still printed and kept, and stderr says that
nobody can send it yet and which keys to set (`no_bot_warning`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from bridge.app.channel_config import last_served, off_reason
from bridge.app.channels_up import PLATFORMS
from bridge.app.database import open_database
from bridge.app.home import open_chain, prepare_home
from bridge.cli.rows import tenant_arg
from bridge.cli.tenant_check import unknown_tenant
from bridge.core.config import Settings, config_source
from bridge.core.identities import identity_map
from bridge.core.pairing import CODE_TTL_S, PairingStore, warn_unconfigured
from bridge.core.tenants import configured_tenants
from bridge.types.platform import Platforms
from bridge.types.tenant_dirs import TenantDirs

PAIR_NOTE = f"""TENANT is a configured one: a [tenants.TENANT] table in the config file
(telegram_ids may stay empty), or the local tenant. The person sends
/pair CODE to the bot in a private chat (Telegram, WhatsApp or Matrix) within
{int(CODE_TTL_S // 60)} minutes; `roost access list` shows who is paired."""


def pair_args(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # the epilog's lines as written
    p.epilog = PAIR_NOTE
    p.add_argument("tenant", type=tenant_arg, help="the tenant the person will be bound to")


def no_bot_warning(settings: Settings, platforms: Platforms = PLATFORMS) -> str | None:
    """What stderr says when no chat bot could take a code (None: one can): each bot
    platform's missing keys."""
    served = last_served(settings.home)
    reasons = []
    for platform in platforms:
        if platform.ids_key is None:
            continue  # not a chat of people (the page, the terminal, MCP): nobody pairs there
        reason = off_reason(settings, platform.name)
        if reason is None or platform.name in served:
            return None
        reasons.append(reason)
    minutes = int(CODE_TTL_S // 60)
    return (
        "roost pair: warning: no chat bot is configured, so nobody can send this code yet "
        f"(it stays valid for {minutes} minutes): {'; '.join(reasons)}"
    )


def pair_command(args: argparse.Namespace, settings: Settings) -> int:
    """`roost pair TENANT`: print a one-time code (never logged, stored hashed).

    Only a configured tenant (`[tenants.X]` or the local tenant) can be paired
    to: a binding to anything else would never resolve. Exit 2 otherwise.
    """
    hint = " (telegram_ids may stay empty), then run roost pair again"
    refusal = unknown_tenant(settings, args.tenant, "pair", files_do=False, hint=hint)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2

    code = asyncio.run(issue_code(settings, args.tenant))
    minutes = int(CODE_TTL_S // 60)
    print(f"Pairing code for tenant {args.tenant}: {code}")
    print(f"Valid for {minutes} minutes, once. The person sends this to the bot in a")
    print(f"private chat:  /pair {code}")
    warning = no_bot_warning(settings)
    if warning is not None:
        print(warning, file=sys.stderr)
    return 0


async def issue_code(settings: Settings, tenant: str) -> str:
    """A code for `tenant`, stored hashed and audited (`pairing.issued`), in the order
    `build()` opens things: the config's identities checked (ConfigError before anything
    is opened), the home, the database, the chain; then the start's pairing step."""
    identity_map(settings.tenants, PLATFORMS)
    prepare_home(settings.home)
    database = await open_database(settings.home / "roost.db", settings.database)
    try:
        chain = await open_chain(settings, time.time, PLATFORMS)
        try:
            pairing = PairingStore(database, time.time)
            await pairing.load()
            known = configured_tenants(settings.tenants, settings.local_tenant)
            warn_unconfigured(pairing, known, config_source(os.environ))
            TenantDirs.of(settings.home, tenant).ensure()
            code = await pairing.issue(tenant)
            await chain.emit("pairing.issued", tenant, {"ttl_s": int(CODE_TTL_S)})
            return code
        finally:
            await chain.aclose()
    finally:
        await database.aclose()
