"""The terminal channel: `roost chat` and `roost send`.

Both run the full pipeline in this process (the same database and files as
the daemon; SQLite WAL lets them share). `send` runs one turn and prints the
reply. `chat` has two faces: in a terminal (stdin and stdout both ttys)
`cli_tty` (a line editor, answers rendered as Markdown while they stream,
tool calls as dim lines, Ctrl-C cancels the running turn, Ctrl-D leaves);
otherwise (a pipe) `chat_loop` here reads lines from stdin and writes each
answer as plain text, a blank line after each. A reply's files are printed
as paths after it (`file: PATH (name)`): the terminal runs on the machine
that holds them. `/attach PATH` (both faces) and a file dropped into the
prompt (a terminal) send a copy of the file with the next message
(`cli_attach`). With a `TerminalInbox` (`cli_inbox`), `chat` also prints the
chat's reminders and job answers: the ones missed while it was closed after
the banner, then each as it arrives, between answers (a turn holds `busy`).
Whatever did not come from roost (answers, file names, reminders) is written
through `controls.shown`: a control sequence in it is seen, not obeyed.

What `chat` talks to is a `Backing`: the core's `handle`, its command
table, the inbox and the attacher of one built roost.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TextIO

from bridge.channels.terminal.controls import shown
from bridge.channels.terminal.local import QUIT, asks_help, help_text
from bridge.types.messages import Attachment, DeltaSink, Final, Handle, Inbound, actions_hint
from bridge.types.progress import ProgressSink

if TYPE_CHECKING:
    from bridge.channels.terminal.attach import Attacher
    from bridge.channels.terminal.inbox import Show, TerminalInbox


class ProgressHandle(Protocol):
    """The core's `handle`, with the sink of tool steps and retries."""

    def __call__(
        self,
        inbound: Inbound,
        on_delta: DeltaSink | None = None,
        on_progress: ProgressSink | None = None,
    ) -> Awaitable[Final]: ...


@dataclass(frozen=True)
class Backing:
    """What `roost chat` talks to, once the roost is built."""

    handle: ProgressHandle
    commands: Sequence[tuple[str, str]] = ()  # (name, summary) of the core's commands
    inbox: TerminalInbox | None = None
    attacher: Attacher | None = None


def inbound(text: str, chat: str, attachments: tuple[Attachment, ...] = ()) -> Inbound:
    return Inbound("cli", "local", chat, text, uuid.uuid4().hex, attachments=attachments)


def file_lines(final: Final) -> str:
    """One `file: PATH (name)` line per file of the reply, then its actions as a hint
    (control characters shown, not obeyed: `shown`)."""
    hint = actions_hint(final.actions, final.text)  # "(reply /yes k3f9 to keep as memory, or …)"
    files = "".join(f"file: {shown(str(f.path))} ({shown(f.name)})\n" for f in final.files)
    return files + (hint and shown(hint) + "\n")


async def send_once(handle: Handle, text: str, chat: str, out: TextIO) -> int:
    """One turn; the reply on `out` (its control characters `shown`). Exit status 1 when
    the reply is an error, a refusal or a command that did not run as asked (`failed`:
    unknown, its usage shown, not allowed from a job)."""
    final = await handle(inbound(text, chat), None)
    out.write(shown(final.text.rstrip("\n")) + "\n" + file_lines(final))
    out.flush()
    return 1 if final.kind in ("error", "refusal") or final.failed else 0


AWAY = "While you were away:"


def watch_inbox(inbox: TerminalInbox | None, show: Show) -> asyncio.Task[None] | None:
    """Start showing the inbox's new messages; None without an inbox."""
    return asyncio.create_task(inbox.watch(show)) if inbox is not None else None


async def stop_watching(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def chat_loop(backing: Backing, chat: str, inp: TextIO, out: TextIO, banner: str) -> int:
    """Read lines until EOF or /quit; stream each answer as it grows (plain text)."""
    interactive = inp.isatty()
    prefix, gap = ("roost> ", "") if interactive else ("", "\n")
    if interactive:
        out.write(banner + "\n")
    inbox = backing.inbox
    missed = await inbox.missed() if inbox is not None else []
    if missed:
        out.write("".join(f"{prefix}{shown(line)}\n" for line in [AWAY, *missed]) + gap)
        out.flush()
    busy = asyncio.Lock()

    async def show(text: str) -> None:
        async with busy:
            out.write(f"{prefix}{shown(text)}\n{gap}")
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
                await _plain_line(backing, text, chat, out, interactive)
                if asks_help(text):  # the core's commands, then the terminal's own
                    out.write(help_text() + "\n" + gap)
                    out.flush()
    finally:
        await stop_watching(watcher)
    return 0


async def _plain_line(backing: Backing, text: str, chat: str, out: TextIO, prefixed: bool) -> None:
    """A local command (`/attach`), or one turn with the files attached before it."""
    if backing.attacher is not None:
        from bridge.channels.terminal.attach import local_command

        reply = await local_command(backing.attacher, text)
        if reply is not None:
            out.write(
                f"{'roost> ' if prefixed else ''}{shown(reply)}\n{'' if prefixed else chr(10)}"
            )
            out.flush()
            return
    files = backing.attacher.take() if backing.attacher is not None else ()
    await _plain_turn(backing.handle, inbound(text, chat, files), out, prefixed)


async def _plain_turn(
    handle: ProgressHandle, message: Inbound, out: TextIO, prefixed: bool
) -> None:
    streamed: list[str] = []
    prefix = "roost> " if prefixed else ""

    async def on_delta(piece: str) -> None:
        if not streamed:
            out.write(prefix)
        streamed.append(piece)
        out.write(shown(piece))
        out.flush()

    final = await handle(message, on_delta)
    if streamed and "".join(streamed).strip() == final.text.strip():
        out.write("\n")
    else:
        if streamed:
            out.write("\n")
        out.write(prefix + shown(final.text.rstrip("\n")) + "\n")
    out.write(file_lines(final))
    if not prefixed:
        out.write("\n")
    out.flush()
