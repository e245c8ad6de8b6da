"""`roost serve`, `roost chat` and `roost send`: the commands that run the full pipeline.

`serve` runs the daemon (`bridge.app.serve`); `chat` and `send` build the same
roost in this process (`bridge.app.build.with_roost`) and talk to its core
through the terminal channel, so a message from a script takes the path a
chat message takes (`send --to` instead leaves a message in the outbox for the
running daemon to deliver: `bridge.cli.schedule`). The composition root is
imported only when one of them runs, so `roost --help` and the operator commands start lean.
Each resumes the garbage collector `main` paused once it has started (its roost built,
`serve` ready): `bridge.cli.collector`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from bridge.cli import collector
from bridge.cli.rows import tenant_arg
from bridge.core.config import EX_CONFIG, Settings
from bridge.types.backend import OFFLINE

if TYPE_CHECKING:
    from bridge.app.build import Roost
    from bridge.channels.terminal.channel import Backing
    from bridge.channels.terminal.inbox import TerminalInbox
    from bridge.cli.chat_log import ChatLog

CHAT_BANNER = "roost chat — /help lists commands, /quit or Ctrl-D leaves."
TTY_BANNER = (
    "roost chat — /help lists commands (Tab completes them), ↑/↓ recall earlier lines;\n"
    "Alt+Enter or a line ending in \\ starts a new line; Ctrl-C stops an answer, "
    "Ctrl-D leaves."
)
NO_MODEL = (
    "roost send: no model is configured (provider auto found no server), so there is "
    "nobody to answer. Set llm.base_url and llm.model in roost.toml ({path}) or "
    "ROOST_LLM__BASE_URL and ROOST_LLM__MODEL (and ROOST_LLM__API_KEY), or pass --offline "
    "to get the offline answer; `roost doctor` checks the setup."
)


def run_serve(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.app.serve import serve

    return asyncio.run(serve(settings, ready=lambda port: collector.resume()))


CHAT_KEYS = """in the chat:
  /help (/help all): the chat commands; anything else goes to the assistant
{local}
  Ctrl-C stops a running answer, or clears the line; Alt+Enter, or a line ending
  in \\, starts a new line; Up/Down recall earlier lines

It runs as the local tenant (ROOST_LOCAL_TENANT, default local), the web page's;
the daemon need not run, except for reminders. With stdin or stdout not a terminal
it reads line by line and writes plain text. Its log: $ROOST_HOME/logs/chat.log."""


def chat_args(p: argparse.ArgumentParser) -> None:
    from bridge.channels.terminal.local import help_lines  # the chat's own /help lines

    p.formatter_class = argparse.RawDescriptionHelpFormatter  # the epilog's lines as written
    p.epilog = CHAT_KEYS.format(local="\n".join(help_lines()))
    p.add_argument("--chat", default="terminal", help="conversation name (default terminal)")


def terminal_inbox(r: Roost, chat: str) -> TerminalInbox:
    """The local tenant's reminders and job answers for terminal chat `chat`."""
    from bridge.channels.terminal.inbox import SEEN_KEY, TerminalInbox
    from bridge.schedule.runtime import recent_messages

    tenant, seen = r.settings.local_tenant, r.loadout.chats
    assert seen is not None  # a built roost stores chat settings (and flushes them at close)

    async def fetch(after: int) -> list[dict[str, Any]]:
        """The chat's new outbox texts, masked again with the vault of now (a value vaulted
        after the text was queued is masked too, as on the web page and every delivery)."""
        rows = await recent_messages(r.database, tenant, "cli", chat, after)
        mask = r.loadout.vault.masker(r.tenant_dirs(tenant))
        return [{**row, "text": mask.mask(str(row["text"]))} for row in rows]

    return TerminalInbox(
        fetch,
        lambda: seen.get(tenant, "cli", chat, SEEN_KEY),
        lambda value: seen.set_soon(tenant, "cli", chat, SEEN_KEY, value),
    )


def backing_of(r: Roost, chat: str) -> Backing:
    """What terminal chat `chat` talks to in roost `r`."""
    from bridge.channels.terminal.attach import Attacher
    from bridge.channels.terminal.channel import Backing

    inbox_dir = r.tenant_dirs(r.settings.local_tenant).inbox
    return Backing(
        r.core.handle,
        [(c["name"], c["summary"]) for c in r.command_list()],
        terminal_inbox(r, chat),
        Attacher(inbox_dir, lambda: r.senses.limits.attachment_bytes),
    )


def _preload() -> None:
    """What a terminal chat needs beside the prompt, imported in a thread while it shows."""
    for name in ("bridge.app.build", "bridge.channels.terminal.render"):  # the latter: rich
        importlib.import_module(name)


async def start_roost(settings: Settings) -> Roost:
    await asyncio.to_thread(_preload)
    from bridge.app.build import build

    roost = await build(settings)
    collector.resume()
    return roost


async def chat_in_terminal(
    args: argparse.Namespace, settings: Settings, log: ChatLog | None
) -> int:
    """The prompt at once; the roost is built behind it (then the screens' tables, while the
    person types: its first message compiles none) and closed after the chat."""
    from bridge.channels.terminal.tty import chat_tty
    from bridge.types.tenant_dirs import TenantDirs

    building = asyncio.create_task(start_roost(settings))
    tenant_root = TenantDirs.of(settings.home, settings.local_tenant).root.parent
    tenant_root.mkdir(mode=0o700, parents=True, exist_ok=True)

    async def ready() -> Backing:
        return backing_of(await asyncio.shield(building), args.chat)

    async def screens() -> None:
        """The screens' tables, built while the person types its first message."""
        try:
            await asyncio.shield(building)
        except Exception:  # the prompt ends with the failure
            return
        from bridge.screening.prepare import prepare_screens

        await prepare_screens()

    preparing = asyncio.create_task(screens())
    try:
        notice = log.notice if log is not None else None
        return await chat_tty(
            ready(), args.chat, tenant_root / "terminal-history", TTY_BANNER, notice
        )
    finally:
        preparing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await preparing
        try:
            roost = await building
        except Exception:  # the chat ended with it, or is ending anyway
            pass
        else:
            await roost.aclose()


def run_chat(args: argparse.Namespace, settings: Settings) -> int:
    """In a terminal the line editor and rendered answers; from a pipe, line by line.
    Either way the chat's reminders and job answers show between answers, and
    the log goes to `$ROOST_HOME/logs/chat.log`, not into the conversation."""
    from bridge.cli.chat_log import log_to_file

    log = log_to_file(settings.home)
    if sys.stdin.isatty() and sys.stdout.isatty():
        return asyncio.run(chat_in_terminal(args, settings, log))
    from bridge.app.build import with_roost
    from bridge.channels.terminal import channel as term

    async def body(r: Roost) -> int:
        collector.resume()
        return await term.chat_loop(
            backing_of(r, args.chat), args.chat, sys.stdin, sys.stdout, CHAT_BANNER
        )

    return asyncio.run(with_roost(settings, None, body))


SEND_EXITS = """exit status:
  0   an answer, or (with --to) the message queued
  1   the reply is an error, or a slash command that did not run as asked
  2   wrong usage: --key without --to, a --tenant roost does not know, an empty
      message or one past [limits] max_message_chars (as arguments or on stdin),
      a malformed --to, or a --to channel that is not configured (nothing queued)
  78  no model is configured (provider auto found none): a slash command or
      --offline still runs; or the configuration is invalid"""


def send_args(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # the epilog's lines as written
    p.epilog = SEND_EXITS
    p.add_argument("--tenant", type=tenant_arg, help="tenant (default: the local tenant)")
    p.add_argument("--chat", default="send", help="conversation name (default send)")
    p.add_argument(
        "--to",
        metavar="TARGET",
        help="deliver TEXT (no turn) through the running daemon: CHANNEL:CHAT as the "
        "platform writes it, e.g. web:default (a malformed one lists every form)",
    )
    p.add_argument("--key", help="with --to: an idempotency key (delivered at most once)")
    p.add_argument(
        "--offline",
        action="store_true",
        help="run the turn even when no model is configured (the offline answer)",
    )
    p.add_argument("text", nargs="+", help="the message; `-` reads it from stdin")


def message_text(words: list[str], limit: int) -> str:
    """The message: the words joined, or stdin for a lone `-`, read up to one character
    past `limit` (`[limits] max_message_chars`: the turn refuses it as too long, and
    300 MB piped in once took 643 MB of memory before that)."""
    if words == ["-"]:
        return sys.stdin.read(limit + 1).rstrip("\n")
    return " ".join(words)


def no_model(r: Roost, text: str, offline: bool) -> bool:
    """True when `send` has nobody to answer: provider auto found no model server.

    A command needs no model; `--offline` or `provider = "offline"` asks for the
    offline answer on purpose.
    """
    if offline or text.lstrip().startswith("/"):
        return False
    return r.settings.llm.provider == "auto" and r.backend.name == OFFLINE


def run_send(args: argparse.Namespace, settings: Settings) -> int:
    """Exit 0 on an answer (or a queued --to message), 1 when the reply is an error,
    2 for `--key` without `--to`, a `--tenant` neither configured nor with files in
    the home, or a message empty or too long, 78 when no model is configured (a command or
    `--offline` still runs)."""
    if args.key is not None and args.to is None:
        print(
            "roost send: --key goes with --to (a message left for the daemon to deliver); "
            "a turn takes no key: drop --key, or add --to CHANNEL:CHAT",
            file=sys.stderr,
        )
        return 2
    if args.tenant is not None:
        from bridge.cli.tenant_check import unknown_tenant

        refusal = unknown_tenant(settings, args.tenant, "send", files_do=True)
        if refusal is not None:  # a typo would otherwise become a tenant (its folders made)
            print(refusal, file=sys.stderr)
            return 2
    if args.to is not None:
        from bridge.cli.schedule import send_to

        collector.resume()
        return send_to(args, settings)
    from bridge.app.build import with_roost
    from bridge.channels.terminal import channel as term
    from bridge.core.config import config_path

    limit = settings.limits.max_message_chars
    text = message_text(args.text, limit)
    if not text.strip():
        print("roost send: the message is empty", file=sys.stderr)
        return 2
    if len(text) > limit:  # a usage error, on stdin or in the arguments alike
        size = f"longer than {limit:,}" if args.text == ["-"] else f"{len(text):,}"
        print(
            f"roost send: the message is {size} characters; at most {limit:,} go in one "
            "([limits] max_message_chars): send it in parts",
            file=sys.stderr,
        )
        return 2

    async def body(r: Roost) -> int:
        collector.resume()
        if no_model(r, text, args.offline):
            print(NO_MODEL.format(path=config_path(os.environ)[0]), file=sys.stderr)
            return EX_CONFIG
        return await term.send_once(r.core.handle, text, args.chat, sys.stdout)

    return asyncio.run(with_roost(settings, args.tenant, body))
