"""One message's answer in one Telegram chat, as the core's reply object.

Typing once the turn has worked for a moment, streamed drafts with a Stop
button as the answer grows (`bridge.channels.telegram.stream`), the final
text, then files, buttons and a spoken answer; a short answer is one
`sendMessage`. A message that waits behind the chat's running answer gets a
👀 reaction at once, taken back when its answer starts
(`bridge.channels.telegram.ack`). A press of an "in place" button (`in_place`: the message
it sits on) shows its answer in that message instead of a new one. With
the outbox wired (`undelivered`), the final text gets
one attempt per Telegram call: when that fails it goes into the outbox (key
`reply:<msg_id>`) with what the person already sees of it (the messages it
is shown in, as `OutboxPart`s) BEFORE any retry, and the scheduler retries
it from there, also after a crash or a restart, editing those messages
rather than sending them again. Without an outbox the sender's own retries
apply and a failure is logged.

Nothing fails silently: a file that did not arrive, a voice message that
could not be uploaded, buttons Telegram did not take and an answer Telegram
did not confirm each get a line in the chat saying so, and a line that
cannot be sent either goes to the outbox (`reply:<msg_id>:<what>`).
`settled` turns True once the final text was delivered or kept in the
outbox. When files, buttons, a voice message or a notice follow the text,
`on_settled` is awaited at that moment (the durable inbox counts the message
answered before they go, so a crash meanwhile never answers it twice); a
plain text answer, the usual short one, leaves telling the inbox to the
dispatch once the turn ended (`settled` is what it reads), so the chat's
lock is not held for the inbox's write: the chat's next message neither
waits for it nor gets a 👀 for it. A turn
cancelled while its final is being delivered (roost stopping) finishes that
delivery first, for up to `SETTLE_S`, so what the person sees and what is
recorded agree.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence

from telegram import Bot

from bridge.channels.common.render import Rendered
from bridge.channels.telegram.ack import Ack
from bridge.channels.telegram.actions import STOP_KEYS, attach, typed
from bridge.channels.telegram.files import send_files
from bridge.channels.telegram.send import DeliveryError, Sender, Unconfirmed
from bridge.channels.telegram.stream import STOPPED, UNKNOWN, StreamingReply, StreamTiming
from bridge.channels.telegram.typing import LoopTimer, Timer, Typing
from bridge.channels.telegram.voice import Speak, speak_out
from bridge.schedule.outbox_parts import OutboxPart
from bridge.schedule.runtime import Undelivered
from bridge.types.messages import Final, Inbound, OutFile

log = logging.getLogger("bridge.channels.telegram.channel")
ABORTED = "roost was stopped before the answer was complete"
RESUMES = ABORTED + "; it answers this message again once it is back"
ABORT_NOTICE_S = 3.0
SETTLE_S = 10.0  # a final being delivered when roost stops gets this long to finish
UNCONFIRMED = (
    "⚠️ Telegram did not confirm that this answer arrived in full. If a part of it is "
    "missing, ask me to send it again."
)

__all__ = ["ABORTED", "RESUMES", "TelegramReply", "Undelivered"]


def shown_parts(message_ids: list[int]) -> list[OutboxPart]:
    """What the person sees of an answer, for the outbox: each message is edited to
    its final text (an edit that changes nothing is fine); one whose send has an
    unknown outcome is never sent again."""
    return [
        OutboxPart(i, "unknown") if mid == UNKNOWN else OutboxPart(i, "draft", str(mid))
        for i, mid in enumerate(message_ids)
    ]


class Working:
    """`TelegramReply.working()`: its turn came, so the waiting reaction goes (`Ack.clear`,
    waited for at the end); typing shows once the turn has lasted a moment (`Typing`).
    A plain class rather than a generator-based context manager: every answer enters it."""

    __slots__ = ("_ack", "_clearing", "_typing")

    def __init__(self, ack: Ack, typing: Typing) -> None:
        self._ack, self._typing = ack, typing
        self._clearing: asyncio.Future[bool] | None = None

    async def __aenter__(self) -> None:
        self._clearing = self._ack.clear()
        try:
            await self._typing.__aenter__()
        except BaseException:
            await self.__aexit__()
            raise

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._typing.__aexit__(*exc)
        finally:
            if self._clearing is not None:
                await asyncio.wait({self._clearing})


class TelegramReply:
    """One message's answer in one chat: typing, streamed drafts, the final text
    (into the outbox, key `reply:<msg_id>`, when its first attempt fails)."""

    def __init__(
        self,
        sender: Sender,
        timing: StreamTiming,
        undelivered: Undelivered | None,
        chat_id: int,
        reply_to: int | None,
        inbound: Inbound,
        bot: Bot | None = None,
        speak: Speak | None = None,
        *,
        timer: Timer | None = None,
        in_place: int | None = None,
        resumed: Sequence[int] = (),
        on_draft: Callable[[list[int]], Awaitable[None]] | None = None,
    ) -> None:
        """`in_place`: the message a pressed button's answer replaces; `resumed`: the
        messages an earlier process (killed or stopped) showed a draft of this answer
        in, edited into it; `on_draft`: told the messages a draft is shown in."""
        self._sender, self._chat, self._msg_id = sender, chat_id, inbound.msg_id
        self._timer = timer or LoopTimer()
        self._bot = bot  # puts a reply's one-tap actions on its last message
        self._speak = speak  # the answer spoken too (bridge.channels.telegram.voice)
        self._inbound = inbound
        self._undelivered = undelivered
        self._timing = timing
        # the outbox retries (durably) what fails once; without one, the sender retries
        self._once = sender.once() if undelivered is not None else sender
        self._stream = StreamingReply(
            sender,
            chat_id,
            reply_to,
            timing,
            final_sender=self._once,
            timer=self._timer,
            stop=STOP_KEYS,
            on_shown=on_draft,
        )
        if in_place is not None:  # the answer replaces what that message shows
            self._stream.resume([in_place])
        else:  # a draft an earlier process left becomes the answer
            self._stream.resume(resumed)
        self.settled = False  # the final text was delivered or kept in the outbox
        # told when it settles, if more than the text follows (else the dispatch tells it)
        self.on_settled: Callable[[], Awaitable[None]] | None = None
        self.abort_notice = ABORTED  # RESUMES when a durable inbox answers it after a restart
        self.called = False  # the core handed it a final (not a silent outcome)
        self._ack = Ack(bot, chat_id, inbound.msg_id)  # 👀 while it waits for its turn

    def queued(self, ahead: int) -> None:
        """The message waits behind its chat's running answer: a reaction says so now."""
        self._ack.queued(ahead)

    def working(self) -> Working:
        """Entered while the core works on the message: the waiting reaction goes, typing
        shows once the turn has lasted `typing_delay_s`."""
        timing = self._timing
        typing = Typing(
            self._sender, self._chat, timing.typing_every_s, timing.typing_delay_s, self._timer
        )
        return Working(self._ack, typing)

    async def delta(self, piece: str) -> None:
        await self._stream.on_delta(piece)

    async def send(self, final: Final) -> None:
        self.called = True
        job = asyncio.ensure_future(self._deliver(final))
        try:
            await asyncio.shield(job)
        except asyncio.CancelledError:
            if not job.done():  # stopping: let the delivery that began finish (bounded)
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(job, SETTLE_S)
            raise

    async def _deliver(self, final: Final) -> None:
        shown = await self._text(final)
        if shown and self._stream.unconfirmed:
            await self._tell(UNCONFIRMED, "unconfirmed")
        if (
            final.actions
            and shown
            and shown[-1] != UNKNOWN
            and self._bot is not None
            and not await attach(self._bot, self._chat, shown[-1], final.actions)
        ):
            await self._tell(typed(final.actions), "actions")
        if final.files:  # documents after the text (bridge.channels.telegram.files)
            await self._files(final.files)
        if self._speak is not None and final.kind == "answer" and final.text.strip():
            notice = await speak_out(
                self._sender, self._chat, self._speak, self._inbound, final.text
            )
            if notice is not None:
                await self._tell(notice, "voice")

    async def _text(self, final: Final) -> list[int]:
        """Show the final text; the message ids it is in ([] when it went to the outbox)."""
        text = final.text
        try:
            if final.kind == "error" and self._stream.streamed.strip():
                text = f"{self._stream.streamed}\n\n{STOPPED}{final.text}"
                shown = await self._stream.stopped(final.text)  # it broke after text was shown
            else:
                shown = await self._stream.finish(final.text)
        except DeliveryError as exc:
            self._sender.failed("command" if final.kind == "command" else "reply")
            kept = await self._keep(text, "", shown_parts(self._stream.parts()))
            if kept:
                await self._settle(final)
            log.error(
                "telegram: the answer to chat %s (msg %s) was not delivered (ref %s): %s%s",
                self._chat,
                self._msg_id,
                secrets.token_hex(4),
                exc,
                "; it waits in the outbox" if kept else "",
            )
            return []
        await self._settle(final)
        return shown

    async def _settle(self, final: Final) -> None:
        """The final text is delivered or kept: `on_settled` hears it now when more
        follows it (files, buttons, a voice message, the unconfirmed notice)."""
        self.settled = True
        if self.on_settled is not None and self._more_follows(final):
            await self.on_settled()

    def _more_follows(self, final: Final) -> bool:
        spoken = self._speak is not None and final.kind == "answer" and bool(final.text.strip())
        return bool(final.files or final.actions or self._stream.unconfirmed or spoken)

    async def _files(self, files: tuple[OutFile, ...]) -> None:
        problems = await send_files(self._sender, self._chat, files)
        if problems:
            await self._tell("\n".join(problems), "files")

    async def _tell(self, text: str, what: str) -> None:
        """A line the person must get: sent once, else kept in the outbox."""
        try:
            await self._once.send(self._chat, Rendered(text))
            return
        except Unconfirmed:
            return  # it may have arrived: never twice
        except DeliveryError as exc:
            failure = exc
        if not await self._keep(text, f"reply:{self._msg_id}:{what}"):
            log.error("telegram: a %s notice to chat %s was lost: %s", what, self._chat, failure)

    async def _keep(self, text: str, key: str, parts: list[OutboxPart] | None = None) -> bool:
        """Hand an undelivered text to the outbox (retried later), if wired."""
        if self._undelivered is None:
            return False
        try:
            return await self._undelivered(self._inbound, text, key, parts or ())
        except Exception:
            log.exception("telegram: could not keep the undelivered answer")
            return False

    async def abort(self) -> None:
        """The turn ended without a reply (cancelled at shutdown): a draft that
        shows part of an answer gets the notice instead of keeping its cursor.
        Nothing happens once the final text was delivered or kept."""
        self._ack.cancel()
        if self.settled:
            return
        await self._stream.abort()
        if self._stream.streamed.strip() and self._stream.shown:
            with contextlib.suppress(Exception):  # best effort, bounded: it is shutting down
                await asyncio.wait_for(self._stream.stopped(self.abort_notice), ABORT_NOTICE_S)
