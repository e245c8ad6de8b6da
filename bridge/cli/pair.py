"""`roost pair TENANT`: a one-time code that binds a chat identity to a configured tenant."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from bridge.cli.rows import tenant_arg
from bridge.cli.tenant_check import unknown_tenant
from bridge.core.config import Settings
from bridge.core.pairing import CODE_TTL_S

if TYPE_CHECKING:
    from bridge.app.build import Roost


def pair_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("tenant", type=tenant_arg, help="the tenant the person will be bound to")


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

    from bridge.app.build import with_roost

    async def body(roost: Roost) -> int:
        roost.tenant_dirs(args.tenant)
        code = await roost.pairing.issue(args.tenant)
        await roost.audit.emit("pairing.issued", args.tenant, {"ttl_s": int(CODE_TTL_S)})
        minutes = int(CODE_TTL_S // 60)
        print(f"Pairing code for tenant {args.tenant}: {code}")
        print(f"Valid for {minutes} minutes, once. The person sends this to the bot in a")
        print(f"private chat:  /pair {code}")
        return 0

    return asyncio.run(with_roost(settings, None, body))
