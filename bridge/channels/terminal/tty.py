"""`roost chat` in a terminal: the prompt at once, the roost built behind it.

The banner and the prompt appear as soon as the line editor is up; the
roost (settings are loaded, but the database, the audit chain and the core
are not) is built meanwhile (`starting`), so a person can type at once. A
line sent before it is ready waits for it (Ctrl-C drops the line), and so
does a Tab (then it completes the core's commands too). When it is ready,
what was missed while away is printed, and reminders show as they arrive,
above the prompt. A failure to start ends
the chat with that error, at the prompt or while a line waits.

Each line: `/attach PATH` and `/detach` are answered here; paths dropped into
the line are attached (`cli_attach`), named in a dim line each; the rest is
one turn, shown live (`cli_render.LiveAnswer`), each tool call and retry as
a dim line (`cli_progress`), Ctrl-C (SIGINT: the terminal is not raw during
a turn) cancels it. What was typed ahead while it ran (shown as typed: the line is
cooked) is then put in the next prompt's line, to be edited or sent with Enter, never
sent by itself (`Typeahead`). After a turn that logged warnings, one dim line says how
many and where the log is (`notice`): the log never writes into the
conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Self, TextIO

from bridge.channels.terminal.channel import Backing, inbound, stop_watching, watch_inbox
from bridge.channels.terminal.controls import shown
from bridge.channels.terminal.local import COMPLETIONS, QUIT, asks_help, help_text
from bridge.types.messages import Final
from bridge.types.progress import Progress

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from rich.console import Console

    from bridge.channels.terminal.render import LiveAnswer

TTY_KEYS = (
    "In this terminal: Tab completes a command, ↑/↓ recall earlier lines, Alt+Enter or a "
    "line ending in \\ starts a new line, Ctrl-C stops an answer, Ctrl-D leaves."
)
Notice = Callable[[], str | None]  # after a turn: "(2 warnings in …/chat.log)", or None


class Screen:
    """The terminal's rich console (made on first use: rich loads with the roost) and
    the lock that keeps a reminder out of a running answer."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.busy = asyncio.Lock()
        self._console: Console | None = None

    @functools.cached_property
    def osc8(self) -> bool:
        """Whether links are OSC 8 links (`cli_links` brings rich's Markdown: not before
        the prompt)."""
        from bridge.channels.terminal.links import hyperlinks

        return hyperlinks(self.env)

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(highlight=False)
        return self._console

    async def above_prompt(self, text: str, style: str = "") -> None:
        from prompt_toolkit.application import run_in_terminal

        line = shown(text)  # a reminder or a job's answer: seen, not obeyed
        await run_in_terminal(lambda: self.console.print(line, style=style, markup=False))


def _failure(ready: asyncio.Future[Backing]) -> BaseException | None:
    if not ready.done() or ready.cancelled():
        return None
    return ready.exception()


def _add_commands(commands: list[tuple[str, str]], ready: asyncio.Future[Backing]) -> None:
    if not ready.cancelled() and ready.exception() is None:
        commands.extend(ready.result().commands)


def _end_prompt_on_failure(session: PromptSession[str], ready: asyncio.Future[Backing]) -> None:
    failed = _failure(ready)
    app = session.app
    if failed is not None and app.is_running and app.future is not None and not app.future.done():
        app.exit(exception=failed)


async def chat_tty(
    starting: Awaitable[Backing],
    chat: str,
    history: Path,
    banner: str,
    notice: Notice | None = None,
) -> int:
    """`roost chat` in a terminal, until Ctrl-D or /quit; exit status 0."""
    from bridge.channels.terminal.editor import make_session

    modes = Modes.saved(sys.stdin)  # put back on SIGTERM/SIGHUP too, prompt or answer
    commands = list(COMPLETIONS)  # the core's join them when the roost is ready
    ready = asyncio.ensure_future(starting)
    ready.add_done_callback(lambda done: _add_commands(commands, done))  # before any waiter
    session = make_session(history, commands, ready)
    sys.stdout.write(banner + "\n")
    sys.stdout.flush()
    ready.add_done_callback(lambda done: _end_prompt_on_failure(session, done))
    screen = Screen(os.environ)
    watching: list[asyncio.Task[None] | None] = [None]
    welcome = asyncio.create_task(_welcome(ready, screen, watching))
    try:
        return await _tty_lines(ready, chat, session, screen, notice)
    finally:
        welcome.cancel()
        await stop_watching(watching[0])
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        if modes is not None:
            modes.restore()


async def _welcome(
    ready: asyncio.Future[Backing],
    screen: Screen,
    watching: list[asyncio.Task[None] | None],
) -> None:
    """Once the roost is up: what was missed, then each reminder."""
    from bridge.channels.terminal.channel import AWAY

    try:
        backing = await asyncio.shield(ready)
    except Exception:
        return  # the prompt ends with the failure
    inbox = backing.inbox
    missed = await inbox.missed() if inbox is not None else []
    if missed:
        async with screen.busy:
            await screen.above_prompt("\n".join([AWAY, *missed]))

    async def show(text: str) -> None:  # above the prompt, never inside an answer
        async with screen.busy:
            await screen.above_prompt(text)

    watching[0] = watch_inbox(inbox, show)


async def _tty_lines(
    ready: asyncio.Future[Backing],
    chat: str,
    session: PromptSession[str],
    screen: Screen,
    notice: Notice | None,
) -> int:
    kept = ""  # typed ahead during an answer stopped by Ctrl-C: in the line, not sent
    while True:
        failed = _failure(ready)
        if failed is not None:
            raise failed
        try:
            text, kept = await session.prompt_async(default=kept), ""
        except KeyboardInterrupt:  # Ctrl-C at the prompt: the line is dropped
            continue
        except EOFError:  # Ctrl-D
            return 0
        if text.strip() in QUIT:
            return 0
        if text.strip():
            async with screen.busy:
                kept = await _tty_turn(ready, text, chat, screen)
            said = notice() if notice is not None else None
            if said:
                screen.console.print(said, style="dim", markup=False, highlight=False)
        if asks_help(text):  # the core's commands, then the terminal's own and its keys
            screen.console.print(help_text() + "\n" + TTY_KEYS, markup=False)


async def _line(
    ready: asyncio.Future[Backing], text: str, chat: str, answer: LiveAnswer
) -> Final | None:
    """One line: a local command, or a turn with its files; None when no turn ran."""
    from bridge.channels.terminal.attach import attach_dropped, local_command
    from bridge.channels.terminal.progress import step_line

    backing = await asyncio.shield(ready)
    attacher = backing.attacher
    if attacher is not None:
        reply = await local_command(attacher, text)
        if reply is not None:
            answer.note(reply, style="")
            return None
        text, notes = await attach_dropped(attacher, text)
        for note in notes:
            answer.note(note)
    files = attacher.take() if attacher is not None else ()
    if not text.strip() and not files:
        return None

    async def progress(step: Progress) -> None:
        line = step_line(step)
        if line is not None:
            answer.note(line)

    return await backing.handle(inbound(text, chat, files), answer.delta, progress)


async def _tty_turn(ready: asyncio.Future[Backing], text: str, chat: str, screen: Screen) -> str:
    """One line shown live; Ctrl-C (SIGINT: the terminal is not raw now) cancels it, and
    what was typed ahead meanwhile is returned for the next prompt's line (else "")."""
    from bridge.channels.terminal.render import LiveAnswer

    answer = LiveAnswer(screen.console, screen.osc8)
    loop = asyncio.get_running_loop()
    turn = asyncio.ensure_future(_line(ready, text, chat, answer))
    loop.add_signal_handler(signal.SIGINT, turn.cancel)
    typeahead = Typeahead.keep(sys.stdin)
    try:
        final = await turn
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if not turn.cancelled() or (current is not None and current.cancelling()):
            raise
        answer.stop()
        return typeahead.take() if typeahead is not None else ""
    finally:  # until the prompt takes the keys again, a late Ctrl-C is ignored
        loop.add_signal_handler(signal.SIGINT, lambda: None)
        if typeahead is not None:
            typeahead.restore()
    if final is not None:
        answer.finish(final)
    return ""


_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|O.|.)?|[\x00-\x08\x0b-\x1f\x7f]")
_ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)  # they end the chat at once


class Modes:
    """A terminal's modes, put back at the end: by `restore`, and first thing on SIGTERM,
    SIGHUP or SIGQUIT (Ctrl-\\), which then end the process as they would have (else the
    shell was left with prompt_toolkit's raw mode, or a turn's NOFLSH: atk40 #8)."""

    def __init__(self, fd: int, before: list[Any]) -> None:
        self._fd, self._before = fd, before
        self._handlers: dict[int, Any] = {}

    @classmethod
    def saved(cls, stream: TextIO) -> Self | None:
        """`stream`'s terminal modes now, guarded; None off a terminal."""
        import termios

        try:
            fd = stream.fileno()
            before = termios.tcgetattr(fd)
        except (OSError, ValueError, termios.error):  # not a terminal, or closed
            return None
        modes = cls(fd, before)
        for sig in _ENDING:
            if signal.getsignal(sig) is not signal.SIG_IGN:  # ignored (nohup): left so
                modes._handlers[sig] = signal.signal(sig, modes._ended)
        return modes

    def restore(self) -> None:
        """The terminal as it was, and the signals' own handlers."""
        self._set(self._before)
        for sig, handler in self._handlers.items():
            signal.signal(sig, handler)
        self._handlers = {}

    def _set(self, attrs: list[Any]) -> None:
        import termios

        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(self._fd, termios.TCSANOW, attrs)

    def _ended(self, sig: int, frame: FrameType | None) -> None:
        handler = self._handlers.get(sig, signal.SIG_DFL)
        self.restore()
        if callable(handler):  # an outer guard's: it puts back its own modes
            handler(sig, frame)
            return
        signal.signal(sig, signal.SIG_DFL)  # ended by it, as without the guard
        os.kill(os.getpid(), sig)


class Typeahead(Modes):
    """What is typed while a turn runs, kept from Ctrl-C's flush.

    The line is cooked then (keys shown as typed, Backspace works), so Ctrl-C is the
    terminal's interrupt, and by default the kernel throws away the input queue with it.
    `keep` sets NOFLSH on the terminal for the turn; after Ctrl-C `take` reads the queue
    itself (whole lines and the half one) as text for the next prompt's line: nothing is
    sent until Enter (a paste then Ctrl-C sent each pasted line before, atk40 #2). When
    the answer ends by itself the prompt reads the queue, as a terminal would. `restore`
    puts the terminal back (an ending signal too: `Modes`)."""

    @classmethod
    def keep(cls, stream: TextIO) -> Typeahead | None:
        """NOFLSH on `stream`'s terminal for a turn; None off a terminal."""
        import termios

        kept = cls.saved(stream)
        if kept is not None:
            attrs = list(kept._before)
            attrs[3] = kept._before[3] | termios.NOFLSH  # lflag
            kept._set(attrs)
        return kept

    def take(self) -> str:
        """What waits in the input queue, as text for the line (control keys dropped)."""
        import termios

        attrs = list(self._before)
        attrs[3] = (self._before[3] | termios.NOFLSH) & ~(termios.ICANON | termios.ECHO)
        attrs[6] = list(self._before[6])
        attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 0, 0  # a read returns at once
        data = b""
        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(self._fd, termios.TCSANOW, attrs)  # the half line readable
            while chunk := os.read(self._fd, 4096):
                data += chunk
        typed = data.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")
        return _ESCAPE.sub("", typed).rstrip("\n")
