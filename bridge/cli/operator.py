"""Operator subcommands that read state without running the daemon.

`roost audit verify|tail`, `roost grade --eval FILE` and
`roost tools list --tenant T`; each is one row for `bridge.cli.main.SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from bridge.app.home import tenant_arg
from bridge.cli.audit import configure_audit_parser, run_audit_command
from bridge.cli.grade import run_grade_eval
from bridge.core.config import Settings
from bridge.types.tenant_dirs import TenantDirs

Row = tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[..., int]]


def _audit(args: argparse.Namespace, settings: Settings) -> int:
    return run_audit_command(args, settings.home, settings.audit_hmac_key_file)


def _grade_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--eval",
        dest="eval_file",
        type=Path,
        required=True,
        help='JSONL lines of {"previous", "reply", "next", "label"}',
    )


def _grade(args: argparse.Namespace, settings: Settings) -> int:
    return run_grade_eval(args.eval_file)


def _tools_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="tools_command", required=True)
    listing = sub.add_parser("list", help="a tenant's saved me.* tools")
    listing.add_argument("--tenant", type=tenant_arg, required=True)


def _tools(args: argparse.Namespace, settings: Settings) -> int:
    from forge.library import ToolLibrary

    dirs = TenantDirs.of(settings.home, args.tenant)
    library = ToolLibrary(dirs.tools, lambda: int(time.time() * 1000))
    now_ms = int(time.time() * 1000)
    tools = library.list()
    if not tools:
        print(f"{args.tenant}: no personal tools")
    for t in tools:
        flag = "  unused 90d" if t.unused(now_ms) else ""
        print(
            f"me.{t.spec.name}\t{t.spec.sha256[:12]}\tcalls {t.usage.calls}\t"
            f"errors {t.usage.errors}\t{t.spec.description}{flag}"
        )
    return 0


def subcommand_rows() -> list[Row]:
    return [
        ("audit", "verify the audit chain or show recent events", configure_audit_parser, _audit),
        ("grade", "score the outcome grader on a labelled JSONL set", _grade_args, _grade),
        ("tools", "list a tenant's personal tools", _tools_args, _tools),
    ]
