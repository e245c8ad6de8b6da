"""Every `roost` subcommand, one row each, in the order `roost --help` lists them.

A row names the command, gives its one-line help (also its `--help`
description), how it adds its arguments and how it runs; commands with
sub-verbs keep them in a `VERBS` table in their own module. A new subcommand
is one function in a module of `bridge/cli` and one row here.
"""

from __future__ import annotations

from bridge.cli import (
    access,
    audit,
    backup,
    daemon,
    doctor,
    export,
    grade,
    importer,
    loadout,
    mcp,
    pair,
    recall,
    schedule,
    style,
    tools,
    units,
    usage,
)
from bridge.cli.rows import Command, no_args

COMMANDS: tuple[Command, ...] = (
    Command(
        "serve",
        "run the daemon (web bridge, Telegram if configured)",
        no_args,
        daemon.run_serve,
        quiet=False,
    ),
    Command("chat", "talk to roost in this terminal", daemon.chat_args, daemon.run_chat),
    Command(
        "send",
        "run one turn through the full pipeline, print the reply",
        daemon.send_args,
        daemon.run_send,
    ),
    Command(
        "pair",
        "print a one-time code binding a Telegram user to TENANT",
        pair.pair_args,
        pair.pair_command,
    ),
    Command(
        "access",
        "who is mapped or paired (list), or revoke a pairing",
        access.access_args,
        access.run_access,
    ),
    Command(
        "doctor",
        "health checks, one line each (exit 1 on a FAIL)",
        doctor.doctor_args,
        doctor.run_doctor,
    ),
    Command(
        "prompt",
        "print the system prompt the model would see, block by block",
        loadout.prompt_args,
        loadout.run_prompt,
    ),
    Command(
        "vault", "manage a tenant's secrets (set, list, rm)", loadout.vault_args, loadout.run_vault
    ),
    Command(
        "audit", "verify the audit chain or show recent events", audit.audit_args, audit.run_audit
    ),
    Command(
        "grade",
        "score the outcome grader on a labelled JSONL set",
        grade.grade_args,
        grade.run_grade,
    ),
    Command(
        "import",
        "bring past conversations in (jsonl, ChatGPT or Claude export)",
        importer.import_args,
        importer.run_import,
    ),
    Command(
        "recall",
        "search everything a tenant said (QUERY or --batch FILE)",
        recall.recall_args,
        recall.run_recall,
    ),
    Command(
        "recall-eval",
        "evidence recall@5/@10 on a LoCoMo-style set, next to plain BM25",
        recall.eval_args,
        recall.run_recall_eval,
    ),
    Command("tools", "list a tenant's personal tools", tools.tools_args, tools.run_tools),
    Command(
        "mcp", "serve a tenant's me.* tools over MCP (stdio, or --http)", mcp.mcp_args, mcp.run_mcp
    ),
    Command(
        "jobs",
        "list scheduled jobs with their next run, and delivery failures",
        schedule.jobs_args,
        schedule.run_jobs,
    ),
    Command(
        "usage",
        "tokens per tenant and model this month (or --month), and budgets",
        usage.usage_args,
        usage.run_usage,
    ),
    Command(
        "install-units",
        "print the systemd units for a prefix, with LoadCredential= lines",
        units.units_args,
        units.run_install_units,
    ),
    Command(
        "style",
        "the user-style learner: status, list-live, sweep",
        style.style_args,
        style.run_style,
    ),
    Command(
        "backup",
        "copy the home, even while the daemon runs",
        backup.backup_args,
        backup.run_backup,
    ),
    Command(
        "restore",
        "restore a backup into an empty home",
        backup.restore_args,
        backup.run_restore,
    ),
    Command(
        "export",
        "a ZIP of all roost holds about a tenant",
        export.export_args,
        export.run_export,
    ),
    Command(
        "forget",
        "delete all of a tenant's data but audit records",
        export.forget_args,
        export.run_forget,
    ),
)


def command(name: str) -> Command:
    """The row of `name` (KeyError for a name that is not in the table)."""
    return {row.name: row for row in COMMANDS}[name]
