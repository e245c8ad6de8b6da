"""Operator commands of the loadout: `roost prompt` and `roost vault set|list|rm`.

`roost prompt --tenant T [--channel C] [--chat X] [--msg-id M]` prints the
system prompt the model would get, block by block with name, size and
budget; `--raw` prints exactly the text the TurnRunner sends and nothing
else. `roost vault set TENANT NAME` reads the value from stdin (a terminal
prompt does not echo it) and never prints it.
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import sys
import time
from collections.abc import Callable
from typing import TextIO

from bridge.app.home import tenant_arg
from bridge.core.config import Settings
from bridge.loadout import vault
from bridge.types.audit_sink import NullAudit
from bridge.types.tenant_dirs import TenantDirs


def prompt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, help="tenant (default: the local tenant)")
    p.add_argument("--channel", default="web", help="channel: web, cli, telegram (default web)")
    p.add_argument("--chat", default=None, help="chat id (for its persona and audience)")
    p.add_argument("--msg-id", default="roost-prompt", help="message id (decides shadow bullets)")
    p.add_argument("--raw", action="store_true", help="print only the exact system prompt")


def run_prompt(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio

    return asyncio.run(
        print_prompt(
            settings,
            args.tenant or settings.local_tenant,
            args.channel,
            args.chat,
            args.msg_id,
            args.raw,
            sys.stdout,
            time.time(),
        )
    )


async def print_prompt(
    settings: Settings,
    tenant: str,
    channel: str,
    chat: str | None,
    msg_id: str,
    raw: bool,
    out: TextIO,
    now: float,
) -> int:
    from bridge.app.build import build
    from bridge.llm.offline import OfflineBackend

    # the daemon's own wiring, so blocks 7-9 read the same stores a turn reads
    roost = await build(settings, backend=OfflineBackend(), audit=NullAudit())
    try:
        assert roost.loadout is not None
        prompt = roost.loadout.prompt
        rendered = prompt.render(roost.tenant_dirs(tenant), channel, chat, msg_id, now)
    finally:
        await roost.aclose()
    if raw:
        out.write(rendered.text)
        return 0
    snap = rendered.snapshot
    digest = hashlib.sha256(rendered.text.encode("utf-8")).hexdigest()[:16]
    out.write(
        f"roost prompt: tenant {tenant}, channel {channel}, chat {chat or '-'}, "
        f"persona {snap.persona}, shadow bullets {'shown' if snap.shadow_on else 'none shown'}\n"
    )
    shown = {b.name: b for b in rendered.blocks}
    for number, block in enumerate(prompt.blocks, 1):
        got = shown.get(block.name)
        if got is None:
            out.write(f"\n== {number}. {block.name}: empty, not sent ==\n")
            continue
        cut = f", cut from {got.size:,}" if got.cut else ""
        out.write(
            f"\n== {number}. {block.name}: {len(got.text):,} characters "
            f"(budget {got.budget:,}{cut}) ==\n{got.text}\n"
        )
    out.write(
        f"\n== total: {len(rendered.blocks)} blocks, {len(rendered.text):,} characters, "
        f"sha256 {digest} (blocks joined by a blank line) ==\n"
    )
    return 0


def vault_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="vault_command", metavar="ACTION", required=True)
    s = sub.add_parser("set", help="store a secret (value read from stdin, never echoed)")
    s.add_argument("tenant", type=tenant_arg)
    s.add_argument("name")
    ls = sub.add_parser("list", help="list a tenant's secret names")
    ls.add_argument("tenant", type=tenant_arg)
    rm = sub.add_parser("rm", help="delete a secret")
    rm.add_argument("tenant", type=tenant_arg)
    rm.add_argument("name")


def read_value(stdin: TextIO) -> str:
    if stdin.isatty():
        return getpass.getpass("value (not shown): ")
    value = stdin.read()
    if value.endswith("\r\n"):
        return value[:-2]
    return value[:-1] if value.endswith("\n") else value


def run_vault(args: argparse.Namespace, settings: Settings) -> int:
    return vault_command(settings, args, sys.stdin, sys.stdout, sys.stderr)


def _record(settings: Settings, event: str, tenant: str, name: str) -> None:
    import asyncio

    from bridge.app.build import record_event

    asyncio.run(record_event(settings, event, tenant, {"name": name, "by": "operator"}))


def vault_command(
    settings: Settings, args: argparse.Namespace, stdin: TextIO, out: TextIO, err: TextIO
) -> int:
    from bridge.app.build import prepare_home

    prepare_home(settings.home)
    dirs = TenantDirs.of(settings.home, args.tenant).ensure()
    try:
        if args.vault_command == "set":
            vault.check_name(args.name)
            value = read_value(stdin)
            vault.set_value(dirs, args.name, value)
            _record(settings, "secret.stored", args.tenant, args.name)
            out.write(f"vault: {args.name} stored for {args.tenant} ({len(value)} characters)\n")
        elif args.vault_command == "list":
            names = vault.names(dirs)
            out.write("".join(f"{n}\n" for n in names) if names else "(no secrets)\n")
        elif args.vault_command == "rm":
            if not vault.remove_value(dirs, args.name):
                err.write(f"roost: {args.tenant} has no secret {args.name}\n")
                return 1
            _record(settings, "secret.removed", args.tenant, args.name)
            out.write(f"vault: {args.name} removed from {args.tenant}\n")
    except vault.VaultError as exc:
        err.write(f"roost: {exc}\n")
        return 2
    return 0


Row = tuple[
    str,
    str,
    Callable[[argparse.ArgumentParser], None],
    Callable[[argparse.Namespace, Settings], int],
]


def subcommand_rows() -> list[Row]:
    """(name, help, configure, run) rows; `bridge.cli.main` appends them to SUBCOMMANDS."""
    return [
        (
            "prompt",
            "print the system prompt the model would see, block by block",
            prompt_args,
            run_prompt,
        ),
        ("vault", "manage a tenant's secrets (set, list, rm)", vault_args, run_vault),
    ]
