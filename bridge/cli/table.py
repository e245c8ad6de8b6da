"""Every `roost` subcommand, one row each, in the order `roost --help` lists them.

A row names the command, gives its one-line help (also its `--help`
description), the module of `bridge/cli` that implements it and the names of
the functions there that add its arguments and run it; commands with
sub-verbs keep them in a `VERBS` table in their own module. A new subcommand
is one function in a module of `bridge/cli` and one row here.

The modules are imported only when their command is chosen (`Row.command`): each
command pays for its own imports only, so `roost --help` imports none of them
and `roost send` does not import what `roost doctor` needs (aiohttp's client,
the MCP SDK, ...). `main.build_parser` makes a command's parser and adds its
arguments only when argparse picks that command (`LazySubParsers`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

from bridge.cli.rows import Command

if TYPE_CHECKING:
    from bridge.core.config import Settings

PACKAGE = "bridge.cli"


def _attr(module: str, name: str) -> Any:
    return getattr(import_module(f"{PACKAGE}.{module}"), name)


@dataclass(frozen=True)
class Row:
    """One subcommand: `bridge.cli.<module>.<run>` runs it, `<add_args>` adds its arguments."""

    name: str
    help: str
    module: str
    add_args: str | None  # None: no arguments
    run: str
    quiet: bool = True  # log only warnings (operator tools)
    resumes: bool = False  # resumes the collector once started (bridge/cli/collector.py)

    def command(self) -> Command:
        """The row as argparse glue calls it; the module is imported on the first call."""

        def add(parser: argparse.ArgumentParser) -> None:
            if self.add_args is not None:
                _attr(self.module, self.add_args)(parser)

        def run(args: argparse.Namespace, settings: Settings) -> int:
            status: int = _attr(self.module, self.run)(args, settings)
            return status

        return Command(self.name, self.help, add, run, quiet=self.quiet, resumes=self.resumes)

    def resolve(self) -> list[object]:
        """The functions the row names, imported (a test checks every row resolves)."""
        names = (self.add_args, self.run)
        return [_attr(self.module, name) for name in names if name is not None]


ROWS: tuple[Row, ...] = (
    Row(
        "serve",
        "run the daemon (web bridge; Telegram, WhatsApp, Matrix if configured)",
        "daemon",
        None,
        "run_serve",
        quiet=False,
        resumes=True,
    ),
    Row("chat", "talk to roost in this terminal", "daemon", "chat_args", "run_chat", resumes=True),
    Row(
        "send",
        "run one turn through the full pipeline, print the reply",
        "daemon",
        "send_args",
        "run_send",
        resumes=True,
    ),
    Row(
        "pair",
        "print a one-time code that binds a chat user to TENANT",
        "pair",
        "pair_args",
        "pair_command",
    ),
    Row(
        "access",
        "who is mapped or paired (list), or revoke a pairing",
        "access",
        "access_args",
        "run_access",
    ),
    Row(
        "doctor",
        "health checks, one line each (exit 1 on a FAIL)",
        "doctor",
        "doctor_args",
        "run_doctor",
    ),
    Row(
        "prompt",
        "print the system prompt the model would see, block by block",
        "loadout",
        "prompt_args",
        "run_prompt",
    ),
    Row("vault", "manage a tenant's secrets (set, list, rm)", "loadout", "vault_args", "run_vault"),
    Row(
        "audit", "verify the audit chain or show recent events", "audit", "audit_args", "run_audit"
    ),
    Row(
        "grade",
        "score the outcome grader on a labelled JSONL set",
        "grade",
        "grade_args",
        "run_grade",
    ),
    Row(
        "import",
        "bring past conversations in (jsonl, ChatGPT or Claude export)",
        "importer",
        "import_args",
        "run_import",
    ),
    Row(
        "recall",
        "search everything a tenant said (QUERY or --batch FILE)",
        "recall",
        "recall_args",
        "run_recall",
    ),
    Row(
        "recall-eval",
        "evidence recall@5/@10 on a LoCoMo-style set, next to plain BM25",
        "recall",
        "eval_args",
        "run_recall_eval",
    ),
    Row("tools", "list a tenant's personal tools", "tools", "tools_args", "run_tools"),
    Row(
        "mcp",
        "serve a tenant's me.* tools over MCP (stdio, or --http)",
        "mcp",
        "mcp_args",
        "run_mcp",
    ),
    Row(
        "jobs",
        "list scheduled jobs with their next run, and delivery failures",
        "schedule",
        "jobs_args",
        "run_jobs",
    ),
    Row(
        "usage",
        "tokens per tenant and model this month (or --month), and budgets",
        "usage",
        "usage_args",
        "run_usage",
    ),
    Row(
        "install-units",
        "print the systemd units for a prefix, with LoadCredential= lines",
        "units",
        "units_args",
        "run_install_units",
    ),
    Row(
        "web-token",
        "print the web page's access token (--link: with its address)",
        "web_token",
        "web_token_args",
        "run_web_token",
    ),
    Row(
        "style",
        "the user-style learner: status, list-live, sweep",
        "style",
        "style_args",
        "run_style",
    ),
    Row(
        "backup", "copy the home, even while the daemon runs", "backup", "backup_args", "run_backup"
    ),
    Row("restore", "restore a backup into an empty home", "backup", "restore_args", "run_restore"),
    Row("db", "the machine state's database: migrate (to PostgreSQL)", "db", "db_args", "run_db"),
    Row("export", "a ZIP of all roost holds about a tenant", "export", "export_args", "run_export"),
    Row(
        "forget",
        "delete all of a tenant's data but audit records",
        "export",
        "forget_args",
        "run_forget",
    ),
)


COMMANDS: tuple[Command, ...] = tuple(row.command() for row in ROWS)


def command(name: str) -> Command:
    """The row of `name` (KeyError for a name that is not in the table)."""
    return {row.name: row for row in COMMANDS}[name]
