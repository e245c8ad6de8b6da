"""`roost serve`, `roost chat` and `roost send`: the commands that run the full pipeline.

`serve` runs the daemon (`bridge.app.serve`); `chat` and `send` build the same
roost in this process (`bridge.app.build.with_roost`) and talk to its core
through the terminal channel, so a message from a script takes the path a
chat message takes (`send --to` instead leaves a message in the outbox for the
running daemon to deliver: `bridge.cli.schedule`). The composition root is
imported only when one of them runs, so `roost --help` and the operator commands start lean.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bridge.cli.rows import tenant_arg
from bridge.core.config import Settings

CHAT_BANNER = "roost chat — /help lists commands, /quit or Ctrl-D leaves."


def run_serve(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.app.serve import serve

    return asyncio.run(serve(settings))


def chat_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chat", default="terminal", help="conversation name (default terminal)")


def run_chat(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.app.build import with_roost
    from bridge.channels import cli as term

    return asyncio.run(
        with_roost(
            settings,
            None,
            lambda r: term.chat_loop(r.core.handle, args.chat, sys.stdin, sys.stdout, CHAT_BANNER),
        )
    )


def send_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, help="tenant (default: the local tenant)")
    p.add_argument("--chat", default="send", help="conversation name (default send)")
    p.add_argument(
        "--to",
        metavar="TARGET",
        help="deliver TEXT (no turn) through the running daemon: telegram:<chat_id> or "
        "web[:<chat>]",
    )
    p.add_argument("--key", help="with --to: an idempotency key (delivered at most once)")
    p.add_argument("text", nargs="+", help="the message")


def run_send(args: argparse.Namespace, settings: Settings) -> int:
    """Exit 0 on an answer (or a queued --to message), 1 when the reply is an error."""
    if args.to is not None:
        from bridge.cli.schedule import send_to

        return send_to(args, settings)
    from bridge.app.build import with_roost
    from bridge.channels import cli as term

    text = " ".join(args.text)
    return asyncio.run(
        with_roost(
            settings,
            args.tenant,
            lambda r: term.send_once(r.core.handle, text, args.chat, sys.stdout),
        )
    )
