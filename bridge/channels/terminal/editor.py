"""The terminal's line editor: a prompt_toolkit session for `roost chat` in a terminal.

Arrow keys and Ctrl-R search the history (`CappedHistory`, kept across runs);
Tab completes slash commands from the core's command table (the rows that
drive `/help` and the web page's hints), with each command's summary beside
it. Multi-line input: Alt+Enter (or Esc then Enter) inserts a line break, and
a line ending in a backslash continues on the next line. Ctrl-C at the prompt
clears the line (`KeyboardInterrupt` from `prompt_async`); Ctrl-D on an empty
line ends the chat (`EOFError`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterable, Sequence
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.application.current import get_app
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from bridge.channels.terminal.history import CappedHistory

PROMPT = "you> "
CONTINUATION = "...> "


class CommandCompleter(Completer):
    """Completes `/na` to `/name` while the first word is being typed.

    `commands` may grow after the prompt is up (the core's table arrives when
    the roost is built), so it is read at each completion; a Tab pressed
    before then waits for `ready` (the roost being built), then completes."""

    def __init__(
        self, commands: Sequence[tuple[str, str]], ready: asyncio.Future[Any] | None = None
    ) -> None:
        self.commands = commands  # (name, summary)
        self.ready = ready

    async def get_completions_async(
        self, document: Document, event: CompleteEvent
    ) -> AsyncGenerator[Completion, None]:
        if self.ready is not None and not self.ready.done():
            with contextlib.suppress(Exception):  # a failed start ends the prompt anyway
                await asyncio.shield(self.ready)
        for completion in self.get_completions(document, event):
            yield completion

    def get_completions(self, document: Document, event: CompleteEvent) -> Iterable[Completion]:
        typed = document.text_before_cursor
        if not typed.startswith("/") or any(c.isspace() for c in typed):
            return
        for name, summary in sorted(self.commands):
            if ("/" + name).startswith(typed.lower()):
                yield Completion("/" + name, -len(typed), display_meta=summary)


def key_bindings() -> KeyBindings:
    """Alt+Enter inserts a line break; Enter after a trailing backslash does too."""
    keys = KeyBindings()

    @keys.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("enter", filter=_ends_in_backslash)
    def _continue(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        buffer.delete_before_cursor(1)
        buffer.insert_text("\n")

    return keys


@Condition
def _ends_in_backslash() -> bool:
    """The line ends in a backslash and the cursor is at its end."""
    buffer = get_app().current_buffer
    return buffer.text.endswith("\\") and buffer.cursor_position == len(buffer.text)


def make_session(
    history: Path,
    commands: Sequence[tuple[str, str]],
    ready: asyncio.Future[Any] | None = None,
) -> PromptSession[str]:
    """The prompt of one `roost chat`; `history` is the tenant's history file."""
    return PromptSession(
        PROMPT,
        history=CappedHistory(history),
        completer=CommandCompleter(commands, ready),
        complete_while_typing=False,
        key_bindings=key_bindings(),
        prompt_continuation=lambda width, line, wrap: CONTINUATION.rjust(width),
        enable_history_search=False,
    )
