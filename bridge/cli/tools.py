"""`roost tools list --tenant T`: a tenant's saved `me.*` tools with hashes and usage.

T must be configured or have files in the home: any other name is refused (exit 2)."""

from __future__ import annotations

import argparse
import sys
import time

from bridge.channels.terminal.controls import shown
from bridge.cli.rows import Run, Verb, add_verbs, pick, tenant_arg
from bridge.cli.tenant_check import unknown_tenant
from bridge.core.config import Settings
from bridge.types.tenant_dirs import TenantDirs


def list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, required=True, help="whose tools to list")


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.loadout.vault import masker_of
    from forge.library import ToolLibrary

    refusal = unknown_tenant(settings, args.tenant, "tools list", files_do=True)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    dirs = TenantDirs.of(settings.home, args.tenant)
    mask = masker_of(dirs)  # a value put in the vault after a tool was saved, too
    library = ToolLibrary(dirs.tools, lambda: int(time.time() * 1000))
    now_ms = int(time.time() * 1000)
    tools = library.list()
    if not tools:
        print(f"{args.tenant}: no personal tools")
    for t in tools:
        flag = "  unused 90d" if t.unused(now_ms) else ""
        print(
            f"me.{t.spec.name}\t{t.spec.sha256[:12]}\tcalls {t.usage.calls}\t"
            f"errors {t.usage.errors}\t{shown(mask.mask(t.spec.description))}{flag}"
        )
    return 0


VERBS: tuple[Verb[Run], ...] = (Verb("list", "a tenant's saved me.* tools", list_args, run_list),)


def tools_args(p: argparse.ArgumentParser) -> None:
    add_verbs(p, "tools_command", VERBS)


def run_tools(args: argparse.Namespace, settings: Settings) -> int:
    return pick(VERBS, args.tools_command)(args, settings)
