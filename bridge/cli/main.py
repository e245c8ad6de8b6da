"""The `roost` command line: serve, chat, send and the operator commands.

Each subcommand is one row of `SUBCOMMANDS` (name, help, how to add its
arguments, how to run it); operator tools of other parts (vault, pair,
audit, ...) live in their own modules and add one row here. Configuration
errors exit with status 78 (EX_CONFIG) and a message naming the key, so
systemd's RestartPreventExitStatus=78 stops a restart loop. Every entry point
runs with umask 0077 (`PRIVATE_UMASK`): whatever roost or its sandbox creates
(database and its WAL, audit files, memory, tools) is readable by its owner only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bridge.app.home import tenant_arg, with_roost
from bridge.app.logging_setup import Redactor, secret_values, setup_logging
from bridge.audit import ChainCorrupt
from bridge.channels import ChannelStartError
from bridge.cli import loadout as loadout_cli
from bridge.cli import operator as operator_cli
from bridge.cli import style as style_cli
from bridge.cli.pair import pair_args, pair_command
from bridge.core.config import EX_CONFIG, ConfigError, Settings, load_settings

PRIVATE_UMASK = 0o077


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Settings], int]
    quiet: bool = True  # log only warnings (operator tools); serve logs at the configured level


def _serve_args(p: argparse.ArgumentParser) -> None:
    return None


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.app.serve import serve

    return asyncio.run(serve(settings))


def _chat_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chat", default="terminal", help="conversation name (default terminal)")


def _chat(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.channels import cli as term

    banner = "roost chat — /help lists commands, /quit or Ctrl-D leaves."
    return asyncio.run(
        with_roost(
            settings,
            None,
            lambda r: term.chat_loop(r.core.handle, args.chat, sys.stdin, sys.stdout, banner),
        )
    )


def _send_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, help="tenant (default: the local tenant)")
    p.add_argument("--chat", default="send", help="conversation name (default send)")
    p.add_argument("text", nargs="+", help="the message")


def _send(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.channels import cli as term

    text = " ".join(args.text)
    return asyncio.run(
        with_roost(
            settings,
            args.tenant,
            lambda r: term.send_once(r.core.handle, text, args.chat, sys.stdout),
        )
    )


SUBCOMMANDS: list[Subcommand] = [
    Subcommand(
        "serve",
        "run the daemon (web bridge, Telegram if configured)",
        _serve_args,
        _serve,
        quiet=False,
    ),
    Subcommand("chat", "talk to roost in this terminal", _chat_args, _chat),
    Subcommand(
        "send", "run one turn through the full pipeline, print the reply", _send_args, _send
    ),
    Subcommand(
        "pair", "print a one-time code binding a Telegram user to TENANT", pair_args, pair_command
    ),
]
SUBCOMMANDS += [Subcommand(*row) for row in loadout_cli.subcommand_rows()]
SUBCOMMANDS += [Subcommand(*row) for row in operator_cli.subcommand_rows()]
SUBCOMMANDS += [Subcommand(*row) for row in style_cli.subcommand_rows()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roost",
        description="roost: a chat-bridge daemon with a persistent per-person loadout.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for row in SUBCOMMANDS:
        row.configure(sub.add_parser(row.name, help=row.help, description=row.help))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    os.umask(PRIVATE_UMASK)  # before anything is created, in every subcommand
    args = build_parser().parse_args(argv)
    row = next(r for r in SUBCOMMANDS if r.name == (args.command or "serve"))
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"roost: {Redactor().redact(str(exc))}", file=sys.stderr)
        return EX_CONFIG
    level = "WARNING" if row.quiet else settings.log_level
    redactor = setup_logging(level, secret_values(settings))

    def fail(message: str, status: int) -> int:
        print(f"roost: {redactor.redact(message)}", file=sys.stderr)
        return status

    try:
        return row.run(args, settings)
    except KeyboardInterrupt:
        return 130
    except ConfigError as exc:
        return fail(str(exc), EX_CONFIG)
    except ChannelStartError as exc:
        return fail(str(exc), 1)
    except ChainCorrupt as exc:
        return fail(
            f"the audit chain is damaged ({exc}). Run `roost audit verify` for details; "
            "move audit/ aside to start a new chain.",
            EX_CONFIG,
        )


if __name__ == "__main__":
    sys.exit(main())
