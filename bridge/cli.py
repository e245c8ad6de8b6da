"""The `roost` command line: serve, chat, send and the operator commands.

Configuration errors exit with status 78 (EX_CONFIG) and a message naming
the key, so systemd's RestartPreventExitStatus=78 stops a restart loop.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

from bridge.config import EX_CONFIG, ConfigError, Settings, check_tenant_id, load_settings
from bridge.logging_setup import setup_logging


def _tenant(value: str) -> str:
    try:
        return check_tenant_id(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roost",
        description="roost: a chat-bridge daemon with a persistent per-person loadout.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("serve", help="run the daemon (web bridge, Telegram if configured)")
    chat = sub.add_parser("chat", help="talk to roost in this terminal")
    chat.add_argument("--chat", default="terminal", help="conversation name (default terminal)")
    send = sub.add_parser("send", help="run one turn and print the reply")
    send.add_argument("--tenant", type=_tenant, help="tenant (default: the local tenant)")
    send.add_argument("--chat", default="send", help="conversation name (default send)")
    send.add_argument("text", nargs="+", help="the message")
    return parser


async def _with_roost(settings: Settings, tenant: str | None, coro_fn):  # type: ignore[no-untyped-def]
    from bridge.daemon import build

    if tenant is not None and tenant != settings.local_tenant:
        settings = settings.model_copy(update={"local_tenant": tenant})
    roost = await build(settings)
    try:
        return await coro_fn(roost)
    finally:
        await roost.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = args.command or "serve"
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"roost: {exc}", file=sys.stderr)
        return EX_CONFIG
    quiet = command in ("chat", "send")
    setup_logging(settings.log_level if not quiet else "WARNING")
    try:
        return _dispatch(command, args, settings)
    except KeyboardInterrupt:
        return 130
    except ConfigError as exc:
        print(f"roost: {exc}", file=sys.stderr)
        return EX_CONFIG


def _dispatch(command: str, args: argparse.Namespace, settings: Settings) -> int:
    from bridge.channels import cli as term

    if command == "serve":
        from bridge.daemon import serve

        return asyncio.run(serve(settings))
    if command == "send":
        text = " ".join(args.text)
        return asyncio.run(
            _with_roost(
                settings,
                args.tenant,
                lambda r: term.send_once(r.core.handle, text, args.chat, sys.stdout),
            )
        )
    if command == "chat":
        banner = "roost chat — /help lists commands, /quit or Ctrl-D leaves."
        return asyncio.run(
            _with_roost(
                settings,
                None,
                lambda r: term.chat_loop(r.core.handle, args.chat, sys.stdin, sys.stdout, banner),
            )
        )
    logging.getLogger("roost").error("unknown command %s", command)
    return 2


if __name__ == "__main__":
    sys.exit(main())
