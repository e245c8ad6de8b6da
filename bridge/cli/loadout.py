"""Operator commands of the loadout: `roost prompt` and `roost vault set|list|rm`.

`roost prompt --tenant T [--channel C] [--chat X] [--msg-id M]` prints the
system prompt the model would get, block by block with name, size and
budget; `--raw` prints exactly the text the TurnRunner sends and nothing
else; T must be configured or have files in the home (exit 2 otherwise).
`roost vault set TENANT NAME` reads the value from stdin (a terminal prompt
does not echo it) and never prints it; Ctrl-D at that prompt sets nothing
(exit 1).
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from bridge.app.channels_up import PLATFORMS
from bridge.app.home import check_chain_key, prepare_home, record_event
from bridge.cli.rows import Verb, add_verbs, pick, tenant_arg
from bridge.cli.tenant_check import unknown_tenant
from bridge.core.config import Settings
from bridge.loadout import vault
from bridge.types.audit_sink import NullAudit
from bridge.types.tenant_dirs import TenantDirs

if TYPE_CHECKING:  # `roost prompt`'s: `roost vault` renders no prompt
    from bridge.app.memory_notes import Explained
    from bridge.prompt.source import Rendered


def prompt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, help="tenant (default: the local tenant)")
    channels = ", ".join(sorted(PLATFORMS.styles()))
    p.add_argument("--channel", default="web", help=f"channel: {channels} (default web)")
    p.add_argument("--chat", default=None, help="chat id (for its persona and audience)")
    p.add_argument("--msg-id", default="roost-prompt", help="message id (decides shadow bullets)")
    p.add_argument("--raw", action="store_true", help="print only the exact system prompt")
    p.add_argument(
        "--message", default=None, help="also show the memory notes this message would get"
    )


def run_prompt(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio

    known = PLATFORMS.styles()
    if args.channel not in known:  # it once printed a prompt no channel ever sends
        print(
            f"roost prompt: no channel {args.channel!r} (known: {', '.join(sorted(known))})",
            file=sys.stderr,
        )
        return 2
    if args.tenant is not None:  # a typo would build (and make the folders of) a new tenant
        refusal = unknown_tenant(settings, args.tenant, "prompt", files_do=True)
        if refusal is not None:
            print(refusal, file=sys.stderr)
            return 2
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
            args.message,
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
    message: str | None = None,
) -> int:
    from bridge.app.build import build
    from bridge.app.memory_notes import MemoryNotes
    from bridge.llm.offline import OfflineBackend

    # the daemon's own wiring, so blocks 7-9 read the same stores a turn reads
    roost = await build(settings, backend=OfflineBackend(), audit=NullAudit())
    try:
        prompt = roost.loadout.prompt
        await prompt.prepare(tenant)  # the tenant's grades and style bullets, as a turn reads
        rendered = prompt.render(roost.tenant_dirs(tenant), channel, chat, msg_id, now)
        notes = MemoryNotes(roost.loadout.memory.store, settings.memory)
        found = notes.explain(roost.tenant_dirs(tenant), message) if message else None
    finally:
        await roost.aclose()
    if raw:
        out.write(rendered.text)
    else:
        out.write(describe_prompt(rendered, [b.name for b in prompt.blocks], tenant, channel, chat))
    if found is not None:
        out.write(describe_notes(found, settings.memory.inject_floor, settings.memory.inject_chars))
    return 0


def describe_notes(found: Explained, floor: float, budget: int) -> str:
    """Every topic's match with the message, which go in, and the note put before it."""
    chosen = {s.name for s in found.chosen}
    lines = [f"\n== memory notes for this message (floor {floor:.2f}, budget {budget:,}) =="]
    for s in found.scored:
        mark = "injected" if s.name in chosen else "below floor" if s.score < floor else "no room"
        words = ", ".join(s.matched) or "-"
        lines.append(f"  {s.score:.2f}  {s.name}  [{mark}]  words: {words}")
    if not found.scored:
        lines.append("  (no memory topics)")
    lines.append("\n" + (found.note or "(nothing is injected)") + "\n")
    return "\n".join(lines)


def describe_prompt(
    rendered: Rendered, names: Sequence[str], tenant: str, channel: str, chat: str | None
) -> str:
    """Every block in table order (an empty one says so), with sizes, budgets, cuts and a hash."""
    snap = rendered.snapshot
    digest = hashlib.sha256(rendered.text.encode("utf-8")).hexdigest()[:16]
    parts = [
        f"roost prompt: tenant {tenant}, channel {channel}, chat {chat or '-'}, "
        f"persona {snap.persona}, shadow bullets {'shown' if snap.shadow_on else 'none shown'}\n"
    ]
    shown = {b.name: b for b in rendered.blocks}
    for number, name in enumerate(names, 1):
        got = shown.get(name)
        if got is None:
            parts.append(f"\n== {number}. {name}: empty, not sent ==\n")
            continue
        cut = f", cut from {got.size:,}" if got.cut else ""
        parts.append(
            f"\n== {number}. {name}: {len(got.text):,} characters "
            f"(budget {got.budget:,}{cut}) ==\n{got.text}\n"
        )
    parts.append(
        f"\n== total: {len(rendered.blocks)} blocks, {len(rendered.text):,} characters, "
        f"sha256 {digest} (blocks joined by a blank line) ==\n"
    )
    return "".join(parts)


def read_value(stdin: TextIO) -> str:
    if stdin.isatty():
        return getpass.getpass("value (not shown): ")
    value = stdin.read()
    if value.endswith("\r\n"):
        return value[:-2]
    return value[:-1] if value.endswith("\n") else value


def _record(settings: Settings, event: str, tenant: str, name: str) -> None:
    import asyncio

    asyncio.run(record_event(settings, event, tenant, {"name": name, "by": "operator"}, PLATFORMS))


@dataclass(frozen=True)
class VaultCall:
    """What a vault verb works on: settings, the parsed line, the tenant's directories, stdio."""

    settings: Settings
    args: argparse.Namespace
    dirs: TenantDirs
    stdin: TextIO
    out: TextIO
    err: TextIO


def vault_set(call: VaultCall) -> int:
    args = call.args
    vault.check_name(args.name)
    check_chain_key(call.settings)  # its record could not follow: nothing changes
    try:
        value = read_value(call.stdin)
    except EOFError:  # Ctrl-D at the hidden prompt (Ctrl-C is exit 130, as everywhere)
        call.err.write(f"roost vault set: nothing set ({args.name} for {args.tenant} unchanged)\n")
        return 1
    vault.set_value(call.dirs, args.name, value)
    _record(call.settings, "secret.stored", args.tenant, args.name)
    call.out.write(f"vault: {args.name} stored for {args.tenant} ({len(value)} characters)\n")
    return 0


def vault_list(call: VaultCall) -> int:
    names = vault.names(call.dirs)
    call.out.write("".join(f"{n}\n" for n in names) if names else "(no secrets)\n")
    return 0


def vault_rm(call: VaultCall) -> int:
    args = call.args
    check_chain_key(call.settings)
    if not vault.remove_value(call.dirs, args.name):
        call.err.write(f"roost: {args.tenant} has no secret {args.name}\n")
        return 1
    _record(call.settings, "secret.removed", args.tenant, args.name)
    call.out.write(f"vault: {args.name} removed from {args.tenant}\n")
    return 0


def tenant_and_name(p: argparse.ArgumentParser) -> None:
    p.add_argument("tenant", type=tenant_arg)
    p.add_argument("name")


def tenant_only(p: argparse.ArgumentParser) -> None:
    p.add_argument("tenant", type=tenant_arg)


VERBS: tuple[Verb[Callable[[VaultCall], int]], ...] = (
    Verb("set", "store a secret (value read from stdin, never echoed)", tenant_and_name, vault_set),
    Verb("list", "list a tenant's secret names", tenant_only, vault_list),
    Verb("rm", "delete a secret", tenant_and_name, vault_rm),
)


def vault_args(p: argparse.ArgumentParser) -> None:
    add_verbs(p, "vault_command", VERBS)


def vault_command(
    settings: Settings, args: argparse.Namespace, stdin: TextIO, out: TextIO, err: TextIO
) -> int:
    """Exit 0 done, 1 no such secret (or nothing set), 2 a refused name, value or tenant."""
    refusal = unknown_tenant(
        settings, args.tenant, f"vault {args.vault_command}", files_do=args.vault_command != "set"
    )
    if refusal is not None:
        err.write(refusal + "\n")
        return 2
    prepare_home(settings.home)
    dirs = TenantDirs.of(settings.home, args.tenant).ensure()
    try:
        return pick(VERBS, args.vault_command)(VaultCall(settings, args, dirs, stdin, out, err))
    except vault.VaultError as exc:
        err.write(f"roost: {exc}\n")
        return 2


def run_vault(args: argparse.Namespace, settings: Settings) -> int:
    return vault_command(settings, args, sys.stdin, sys.stdout, sys.stderr)
