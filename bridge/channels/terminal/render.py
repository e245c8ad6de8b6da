"""How `roost chat` shows an answer in a terminal: Markdown by rich, live as it grows.

`LiveAnswer` takes the answer's pieces as they stream and redraws one rich
`Live` region (at most every `REDRAW_S`, so a long answer is not re-rendered
per token); while it grows the region shows the last lines that fit the
screen, and when the answer is complete the region is replaced by the whole
rendering, once: nothing is printed twice. Model answers are Markdown; replies
of commands, errors and refusals are shown as they are (their text is not
Markdown: `/help` has `<name>` in it). Their control characters are
replaced before rich sees them (`controls.shown`: an escape sequence in an
answer is seen, not obeyed); rich's own styling comes after. Links show
their URL unless the terminal shows OSC 8 links (`cli_links`). `note` prints a dim line above the
growing answer (a tool call, a retry: `cli_progress`). Only used when stdout
is a terminal; piped output is plain text from `bridge.channels.terminal.channel` (no
escape codes).
"""

from __future__ import annotations

import asyncio

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.live import Live
from rich.segment import Segment
from rich.text import Text

from bridge.channels.terminal.controls import shown
from bridge.channels.terminal.links import AnswerMarkdown
from bridge.types.messages import Final

REDRAW_S = 0.05
STOPPED = "(stopped)"


class Tail:
    """The last lines of a renderable that fit the screen (the growing end of an answer)."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.inner, options, pad=False)
        keep = max(1, options.size.height - 2)
        for line in lines[-keep:]:
            yield from line
            yield Segment.line()


def rendering(final: Final, osc8: bool = False) -> RenderableType:
    """A reply as shown: Markdown for an answer, plain text (red for an error) otherwise."""
    text = final.text.rstrip("\n")
    if final.kind == "answer":
        return AnswerMarkdown(text, osc8)  # its text `shown` there, once
    return Text(shown(text), style="red" if final.kind in ("error", "refusal") else "")


class LiveAnswer:
    """One answer in a terminal: `delta` while it streams, then `finish` or `stop`."""

    def __init__(self, console: Console, osc8: bool = False) -> None:
        self.console, self.osc8 = console, osc8
        self.text = ""
        self._live: Live | None = None
        self._last = float("-inf")
        self._pending: asyncio.TimerHandle | None = None

    async def delta(self, piece: str) -> None:
        self.text += piece
        if self._live is None:
            self._live = Live(console=self.console, auto_refresh=False, transient=False)
            self._live.start()
        if self._pending is None:
            loop = asyncio.get_running_loop()
            wait = max(0.0, self._last + REDRAW_S - loop.time())
            self._pending = loop.call_later(wait, self._redraw)

    def _redraw(self) -> None:
        self._pending = None
        if self._live is not None:
            self._last = asyncio.get_running_loop().time()
            self._live.update(Tail(AnswerMarkdown(self.text, self.osc8)), refresh=True)

    def _end(self, renderable: RenderableType) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        if self._live is None:
            self.console.print(renderable)
            return
        self._live.update(renderable)
        self._live.stop()  # one last, full rendering in place of the live region
        self._live = None

    def finish(self, final: Final) -> None:
        """Show the complete reply (in place of what streamed)."""
        self._end(rendering(final, self.osc8))
        for f in final.files:
            line = f"file: {shown(str(f.path))} ({shown(f.name)})"
            self.console.print(line, markup=False, highlight=False)

    def stop(self) -> None:
        """The turn was cancelled: keep what streamed, then say so."""
        if self.text:
            self._end(AnswerMarkdown(self.text, self.osc8))
        self.console.print(STOPPED, style="dim", markup=False, highlight=False)

    def note(self, line: str, style: str = "dim") -> None:
        """A line of its own, dim by default (above the answer while it grows)."""
        self.console.print(shown(line), style=style, markup=False, highlight=False)
