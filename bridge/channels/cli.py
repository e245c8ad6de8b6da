"""The terminal channel: `roost chat` and `roost send`.

Both run the full pipeline in this process (the same database and files as
the daemon; SQLite WAL lets them share). `send` runs one turn and prints the
reply. `chat` has two faces: in a terminal (stdin and stdout both ttys) a
line editor (`cli_editor`: history, Tab completion, multi-line) and answers
rendered as Markdown while they stream (`cli_render`), where Ctrl-C cancels
the running turn and Ctrl-D leaves; otherwise (a pipe) it reads lines from
stdin and writes each answer as plain text, a blank line after each. A
reply's files are printed as paths after it (`file: PATH (name)`): the
terminal runs on the machine that holds them. With a `TerminalInbox`
(`cli_inbox`), `chat` also prints the chat's reminders and job answers: the
ones missed while it was closed after the banner, then each as it arrives,
between answers (a turn holds `busy`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from bridge.types.messages import Final, Handle, Inbound, actions_hint

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from rich.console import Console

    from bridge.channels.cli_inbox import Show, TerminalInbox

QUIT = {"/quit", "/exit", ":q"}
TTY_KEYS = (
    "In this terminal: Tab completes a command, ↑/↓ recall earlier lines, Alt+Enter or a "
    "line ending in \\ starts a new line, Ctrl-C stops an answer, Ctrl-D leaves."
)


def inbound(text: str, chat: str) -> Inbound:
    return Inbound("cli", "local", chat, text, uuid.uuid4().hex)


def file_lines(final: Final) -> str:
    """One `file: PATH (name)` line per file of the reply, then its actions as a hint."""
    hint = actions_hint(final.actions)  # "(reply /yes k3f9 to keep as memory, or …)"
    return "".join(f"file: {f.path} ({f.name})\n" for f in final.files) + (hint and hint + "\n")


async def send_once(handle: Handle, text: str, chat: str, out: TextIO) -> int:
    """One turn; the reply on `out`. Exit status 1 when the reply is an error."""
    final = await handle(inbound(text, chat), None)
    out.write(final.text.rstrip("\n") + "\n" + file_lines(final))
    out.flush()
    return 1 if final.kind in ("error", "refusal") else 0


AWAY = "While you were away:"


def watch_inbox(inbox: TerminalInbox | None, show: Show) -> asyncio.Task[None] | None:
    """Start showing the inbox's new messages; None without an inbox."""
    return asyncio.create_task(inbox.watch(show)) if inbox is not None else None


async def stop_watching(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def chat_loop(
    handle: Handle,
    chat: str,
    inp: TextIO,
    out: TextIO,
    banner: str,
    inbox: TerminalInbox | None = None,
) -> int:
    """Read lines until EOF or /quit; stream each answer as it grows (plain text)."""
    interactive = inp.isatty()
    prefix, gap = ("roost> ", "") if interactive else ("", "\n")
    if interactive:
        out.write(banner + "\n")
    missed = inbox.missed() if inbox is not None else []
    if missed:
        out.write("".join(f"{prefix}{line}\n" for line in [AWAY, *missed]) + gap)
        out.flush()
    busy = asyncio.Lock()

    async def show(text: str) -> None:
        async with busy:
            out.write(f"{prefix}{text}\n{gap}")
            out.flush()

    watcher = watch_inbox(inbox, show)
    loop = asyncio.get_running_loop()
    try:
        while True:
            if interactive:
                out.write("you> ")
                out.flush()
            line = await loop.run_in_executor(None, inp.readline)
            if not line:
                break
            text = line.rstrip("\n")
            if text.strip() in QUIT:
                break
            if not text.strip():
                continue
            async with busy:
                await _plain_turn(handle, text, chat, out, interactive)
    finally:
        await stop_watching(watcher)
    return 0


async def _plain_turn(handle: Handle, text: str, chat: str, out: TextIO, prefixed: bool) -> None:
    streamed: list[str] = []
    prefix = "roost> " if prefixed else ""

    async def on_delta(piece: str) -> None:
        if not streamed:
            out.write(prefix)
        streamed.append(piece)
        out.write(piece)
        out.flush()

    final = await handle(inbound(text, chat), on_delta)
    if streamed and "".join(streamed).strip() == final.text.strip():
        out.write("\n")
    else:
        if streamed:
            out.write("\n")
        out.write(prefix + final.text.rstrip("\n") + "\n")
    out.write(file_lines(final))
    if not prefixed:
        out.write("\n")
    out.flush()


async def chat_tty(
    handle: Handle,
    chat: str,
    commands: Sequence[tuple[str, str]],
    history: Path,
    banner: str,
    inbox: TerminalInbox | None = None,
) -> int:
    """`roost chat` in a terminal, until Ctrl-D or /quit; exit status 0."""
    from prompt_toolkit.application import run_in_terminal
    from rich.console import Console

    from bridge.channels.cli_editor import make_session

    session = make_session(history, commands)
    console = Console(highlight=False)
    console.print(banner, markup=False)
    missed = inbox.missed() if inbox is not None else []
    for line in [AWAY, *missed] if missed else []:
        console.print(line, markup=False)
    busy = asyncio.Lock()

    async def show(text: str) -> None:  # above the prompt, never inside an answer
        async with busy:
            await run_in_terminal(lambda: console.print(text, markup=False))

    watcher = watch_inbox(inbox, show)
    try:
        return await _tty_lines(handle, chat, session, console, busy)
    finally:
        await stop_watching(watcher)
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)


async def _tty_lines(
    handle: Handle, chat: str, session: PromptSession[str], console: Console, busy: asyncio.Lock
) -> int:
    while True:
        try:
            text = await session.prompt_async()
        except KeyboardInterrupt:  # Ctrl-C at the prompt: the line is dropped
            continue
        except EOFError:  # Ctrl-D
            return 0
        if text.strip() in QUIT:
            return 0
        if text.strip():
            async with busy:
                await _tty_turn(handle, text, chat, console)
        if text.strip().lower() == "/help":
            console.print(TTY_KEYS, markup=False)


async def _tty_turn(handle: Handle, text: str, chat: str, console: Console) -> None:
    """One turn shown live; Ctrl-C (SIGINT: the terminal is not raw now) cancels it."""
    from bridge.channels.cli_render import LiveAnswer

    answer = LiveAnswer(console)
    loop = asyncio.get_running_loop()
    turn = asyncio.ensure_future(handle(inbound(text, chat), answer.delta))
    loop.add_signal_handler(signal.SIGINT, turn.cancel)
    try:
        final = await turn
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if not turn.cancelled() or (current is not None and current.cancelling()):
            raise
        answer.stop()
        return
    finally:  # until the prompt takes the keys again, a late Ctrl-C is ignored
        loop.add_signal_handler(signal.SIGINT, lambda: None)
    answer.finish(final)
