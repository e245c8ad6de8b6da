"""One reply in one Telegram chat: streamed drafts, then the final text.

`StreamingReply` collects the pieces of a growing answer. A background
pump shows the answer as it grows, at most once per `interval` (the first
draft only after `first_delay`, so a fast answer is just one message). The
messages it shows are kept in one list; drafts and the final text are
applied to that same list by `_sync` - edit where the text differs, send
where a message is missing, delete where one is left over - so the final
answer edits the draft in place and continuation chunks follow it: no
duplicates, no vanishing drafts. Only one `_sync` runs at a time, and the
final one waits for an in-flight draft, so a message whose id is not yet
known is never sent twice. An answer that breaks after some text was shown
(`stopped(reason)`) keeps that text and ends with a plain notice, "⚠️ the
answer stopped: <reason>", instead of a draft left hanging with its cursor.
A new message whose outcome is unknown (`Unconfirmed`: Telegram got the
request, no answer came) is kept in `shown` with the id `UNKNOWN` and never
sent again: no more drafts are shown after it, and the final text skips it
when it showed that very text (a draft's older text is replaced by the final
one in a new message). `unconfirmed` counts them, so the reply can say so.
The final text may use its own sender (`final_sender`: one attempt per call
when the outbox does the retrying); `parts()` tells what the person sees.
Rendering is linear, and a text over
`OFFLOAD_CHARS` is laid out in a worker thread. While it streams, the last
draft message carries the `stop` keyboard (a Stop button, when the reply
has one); the final text never does (an edit without a keyboard drops it,
and a message the final text leaves unchanged loses it by
`editMessageReplyMarkup`). Waits go through an injected `Timer`
(`bridge.channels.telegram.typing`), so a test fires "later" itself. Until
the first draft is due the pump is only a timer handle (`Timer.later`): an
answer faster than `first_delay` makes no task for it. A message `resume` handed
over that Telegram refuses to edit (a 400 other than "not found") is replaced: the
answer goes in a new message and the old one's keyboard is taken off (`_replaced`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from telegram import InlineKeyboardMarkup

from bridge.channels.common.render import Rendered, render, utf16_len
from bridge.channels.common.split import LIMIT, split
from bridge.channels.telegram.send import (
    DeliveryError,
    MessageGone,
    Rejected,
    Sender,
    Unconfirmed,
)
from bridge.channels.telegram.typing import Later, LoopTimer, Timer

log = logging.getLogger(__name__)
CURSOR = " …"
STOPPED = "⚠️ the answer stopped: "
OFFLOAD_CHARS = 4096  # texts longer than this are rendered off the event loop
REJECTED = Rendered("[this part of the answer could not be shown]")
UNKNOWN = 0  # the message id of a message Telegram may or may not show (ids start at 1)


@dataclass(frozen=True, slots=True)
class StreamTiming:
    interval_s: float = 1.0  # at most one draft edit per chat per interval
    first_delay_s: float = 1.0  # answers faster than this arrive as one message
    typing_every_s: float = 4.0  # Telegram shows "typing" for about 5 s
    typing_delay_s: float = 0.5  # answers faster than this show no typing indicator


def layout(markdown: str, limit: int = LIMIT) -> list[Rendered]:
    """The messages a Markdown answer becomes (pure)."""
    return split(render(markdown), limit)


async def laid_out(
    fn: Callable[[str, int], list[Rendered]], markdown: str, limit: int
) -> list[Rendered]:
    """`fn(markdown, limit)`; a big text is laid out in a worker thread, so a
    long reply never holds the event loop (other chats) while it renders."""
    if len(markdown) <= OFFLOAD_CHARS:
        return fn(markdown, limit)
    return await asyncio.to_thread(fn, markdown, limit)


def with_notice(chunks: list[Rendered], notice: str, limit: int = LIMIT) -> list[Rendered]:
    """`chunks` and then `notice` as plain text: in the last message when it
    fits, else in a message of its own (never inside a code block)."""
    note = split(Rendered(notice), limit)
    if chunks and note and utf16_len(chunks[-1].text) + 2 + utf16_len(note[0].text) <= limit:
        last = chunks[-1]
        return [*chunks[:-1], Rendered(f"{last.text}\n\n{note[0].text}", last.entities), *note[1:]]
    return [*chunks, *note]


def draft_layout(markdown: str, limit: int = LIMIT) -> list[Rendered]:
    chunks = layout(markdown, limit - len(CURSOR))
    if chunks:
        last = chunks[-1]
        chunks[-1] = Rendered(last.text + CURSOR, last.entities)
    return chunks


class StreamingReply:
    def __init__(
        self,
        sender: Sender,
        chat_id: int,
        reply_to: int | None,
        timing: StreamTiming,
        limit: int = LIMIT,
        final_sender: Sender | None = None,
        *,
        timer: Timer | None = None,
        stop: InlineKeyboardMarkup | None = None,
        on_shown: Callable[[list[int]], Awaitable[None]] | None = None,
    ) -> None:
        self._sender = sender
        self._timer = timer or LoopTimer()
        self._stop = stop  # the keyboard a draft carries (None: drafts have none)
        self._keyed: int | None = None  # the index of the message that carries it
        self._final_sender = final_sender or sender
        self.unconfirmed = 0  # new messages whose outcome is unknown (never sent again)
        self._chat = chat_id
        self._reply_to = reply_to
        self._timing = timing
        self._limit = limit
        self._pieces: list[str] = []
        self._version = 0
        self._shown_version = 0
        self.shown: list[tuple[int, Rendered]] = []  # (message id, what it shows)
        self._lock = asyncio.Lock()
        self._closing = asyncio.Event()
        self._due: Later | None = None  # the first draft's delay, until it has passed
        self._pump: asyncio.Task[None] | None = None  # drafts, once the first is due
        self._on_shown = on_shown  # told the messages a draft is shown in, when they change
        self._told: list[int] = []
        self._resumed: set[int] = set()  # messages `resume` handed over, not yet edited

    def resume(self, message_ids: Sequence[int]) -> None:
        """The answer replaces what these messages show (a pressed button's message, or
        a draft an earlier process showed before it was killed): edited, not sent anew."""
        for message_id in message_ids:
            self.shown.append((message_id, Rendered("")))
        self._resumed = set(message_ids)  # what they show is not known here
        self._told = [mid for mid, _ in self.shown]

    async def on_delta(self, piece: str) -> None:
        """A new piece of the answer; never waits for Telegram."""
        self._pieces.append(piece)
        self._version += 1
        if self._pump is None and self._due is None and not self._closing.is_set():
            self._due = self._timer.later(self._timing.first_delay_s, self._start_pump)

    def _start_pump(self) -> None:
        """The first draft is due: the pump starts (unless the answer ended meanwhile)."""
        self._due = None
        if self._pump is None and not self._closing.is_set():
            self._pump = asyncio.create_task(self._run_pump())

    def _not_due(self) -> None:
        """No draft after all: the answer ends before the first was due."""
        if self._due is not None:
            self._due.cancel()
            self._due = None

    @property
    def streamed(self) -> str:
        """The text received so far."""
        return "".join(self._pieces)

    async def finish(self, markdown: str) -> list[int]:
        """Show the final answer; returns the message ids that carry it."""
        return await self._final(markdown, None)

    async def stopped(self, reason: str) -> list[int]:
        """The answer broke: keep what was streamed, end it with a notice."""
        return await self._final(self.streamed, STOPPED + reason)

    async def _final(self, markdown: str, notice: str | None) -> list[int]:
        self._closing.set()
        self._not_due()
        if self._pump is not None:
            await asyncio.wait({self._pump})  # an aborted (cancelled) pump raises nothing here
        chunks = await laid_out(layout, markdown, self._limit)
        if notice is not None:
            chunks = with_notice(chunks, notice, self._limit)
        if not chunks:
            chunks = [Rendered("(empty answer)")]
        async with self._lock:
            await self._sync(chunks, final=True)
            await self._trim_extra(len(chunks))
            with contextlib.suppress(DeliveryError):  # a Stop button left is no lost answer
                await self._unkey(None)
        return [mid for mid, _ in self.shown]

    def parts(self) -> list[int]:
        """The message ids the answer's parts are shown in so far (`UNKNOWN` where
        a send's outcome is unknown), in order."""
        return [mid for mid, _ in self.shown]

    async def abort(self) -> None:
        self._closing.set()
        self._not_due()
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump

    async def _run_pump(self) -> None:
        """A draft now (the first was due), then at most one per `interval`."""
        while True:
            if self._closing.is_set() or self.unconfirmed:
                return  # no draft after one that may or may not show
            if self._version != self._shown_version:
                await self._draft()
            await self._timer.wait(self._closing, self._timing.interval_s)

    async def _draft(self) -> None:
        """Show the answer so far as a draft (its last message carries the keyboard)."""
        version = self._version
        chunks = await laid_out(draft_layout, "".join(self._pieces), self._limit)
        async with self._lock:
            try:
                await self._sync(chunks, final=False)
                await self._unkey(len(chunks) - 1)
                self._shown_version = version
            except DeliveryError as exc:
                log.warning("draft not shown (chat %s): %s", self._chat, exc)
                self._sender.failed("draft")
        shown = [mid for mid, _ in self.shown if mid != UNKNOWN]
        if self._on_shown is not None and shown != self._told:
            self._told = shown
            await self._on_shown(shown)

    async def _sync(self, chunks: list[Rendered], final: bool) -> None:
        for index, chunk in enumerate(chunks):
            if self.unconfirmed and not final:
                return  # drafts stop at a message that may or may not show
            last = index == len(chunks) - 1
            try:
                await self._show(index, chunk, final, last)
            except Rejected as exc:
                # one text Telegram refuses never costs the rest of the answer
                log.warning("chat %s: part %d refused (%s); marked", self._chat, index + 1, exc)
                self._sender.failed("rejected")
                await self._show(index, REJECTED, final, last)

    async def _show(self, index: int, chunk: Rendered, final: bool, last: bool) -> None:
        """Make message `index` show `chunk`: edit it, or send it when missing. The
        last message of a draft carries the Stop keyboard."""
        sender = self._final_sender if final else self._sender
        keys = self._stop if last and not final else None
        if index < len(self.shown):
            message_id, showing = self.shown[index]
            keyed = self._keyed == index
            if showing == chunk and keyed == (keys is not None):
                return
            if message_id == UNKNOWN:  # an older text, maybe shown: the final one goes anew
                self.shown[index] = (await self._send(sender, chunk, None, keys, index), chunk)
                return
            if showing == chunk:  # only the keyboard changes
                await sender.markup(self._chat, message_id, keys)
                self._keyed = index if keys is not None else None
                return
            try:
                await sender.edit(self._chat, message_id, chunk, keys)
                self._keyed = index if keys is not None else (None if keyed else self._keyed)
            except MessageGone:
                if not final:
                    raise
                self._keyed = None if keyed else self._keyed
                message_id = await self._send(sender, chunk, None, None, index)
            except Rejected:
                if message_id not in self._resumed:
                    raise  # this text refused: `_sync` marks the part
                message_id = await self._replaced(sender, message_id, chunk, keys, index)
            self._resumed.discard(message_id)
            self.shown[index] = (message_id, chunk)
        else:
            reply_to = self._reply_to if not self.shown else None
            self.shown.append((await self._send(sender, chunk, reply_to, keys, index), chunk))

    async def _replaced(
        self,
        sender: Sender,
        message_id: int,
        chunk: Rendered,
        keys: InlineKeyboardMarkup | None,
        index: int,
    ) -> int:
        """A message handed over by `resume` that cannot be edited (a 400 other than "not
        found": an earlier process's draft, a pressed button's message): the answer goes
        in a new one, and the old one loses its keyboard (a Stop button) where Telegram
        lets it; where not, a button pressed there says nothing runs."""
        self._resumed.discard(message_id)
        try:
            await sender.markup(self._chat, message_id, None)
        except DeliveryError as exc:
            log.info("chat %s: a handed-over message keeps its keyboard: %s", self._chat, exc)
        return await self._send(sender, chunk, None, keys, index)

    async def _unkey(self, keep: int | None) -> None:
        """Take the Stop keyboard off a message other than `keep` (None: off all)."""
        index = self._keyed
        if index is None or index == keep:
            return
        self._keyed = None
        if index < len(self.shown) and self.shown[index][0] != UNKNOWN:
            with contextlib.suppress(MessageGone):
                await self._sender.markup(self._chat, self.shown[index][0], None)

    async def _send(
        self,
        sender: Sender,
        chunk: Rendered,
        reply_to: int | None,
        keys: InlineKeyboardMarkup | None = None,
        index: int = 0,
    ) -> int:
        """A new message's id; `UNKNOWN` when Telegram got it and never answered."""
        try:
            message_id = await sender.send(self._chat, chunk, reply_to, keys)
            if keys is not None:
                self._keyed = index
            return message_id
        except Unconfirmed as exc:
            self.unconfirmed += 1
            sender.failed("unconfirmed")
            log.warning("chat %s: a message is unconfirmed, not sent again: %s", self._chat, exc)
            return UNKNOWN

    async def _trim_extra(self, count: int) -> None:
        while len(self.shown) > count:
            if self._keyed == len(self.shown) - 1:
                self._keyed = None  # deleted with its message
            message_id, _ = self.shown.pop()
            if message_id == UNKNOWN:
                continue
            with contextlib.suppress(MessageGone):
                await self._sender.delete(self._chat, message_id)
