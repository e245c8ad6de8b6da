"""Proactive WhatsApp messages (reminders, jobs, `roost send --to`): the outbox's deliver.

WhatsApp lets a business write freely only within 24 hours of the person's
last message (the customer-service window; `store.last_in_ms`). Inside it
an entry goes out as text (rendered and split like an answer). Outside it,
it goes out as the operator's approved template (`[whatsapp] template`,
`template_language`), the entry's text as the body's one variable `{{1}}`,
flattened to one line (Meta refuses new lines, tabs and runs of spaces in a
variable) and cut at `template_chars`; with no template it waits:
`DeliveryError("window")`, retried every 3 hours and made due at once when
the person writes (`OutboxStore.due_now`), dead after the outbox's two days.
Meta's own "outside the window" (131047) is treated the same way. Other
failures become the outbox's kinds: throttling waits (`rate_limited`),
connection trouble and 5xx retry (`network`), an unusable recipient or
request is final (`rejected`), a refused token retries (`forbidden`: the
operator can fix it). One attempt per claim: the outbox does the retrying.
A text in several pieces records each piece as it arrives in the entry's
parts (`PartLog`, table `outbox_parts`, so across restarts too; a failed
answer's entry comes with the pieces the person already got), and a retry
sends only the pieces not recorded, in order: none twice. A piece sent
without an answer is `unknown` and never sent again. A template carries only
the pieces not yet shown.
`notes()` is what `/jobs` says of the chat: which of the two happens now.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bridge.channels.common.parts import Progress
from bridge.channels.common.retry import Backoff
from bridge.channels.whatsapp.client import UNDELIVERABLE, GraphError
from bridge.channels.whatsapp.platform import WA_ID
from bridge.channels.whatsapp.send import Outgoing, lay_out
from bridge.channels.whatsapp.store import WhatsAppStore
from bridge.schedule.outbox import DeliveryError, OutboxEntry
from bridge.schedule.outbox_parts import PartLog
from bridge.storage.errors import StorageError

log = logging.getLogger("bridge.channels.whatsapp")

WINDOW_MS = 24 * 3_600_000
MARGIN_MS = 10 * 60_000  # a message sent this close to the end might arrive after it
WAIT_MS = 3 * 3_600_000
WAITING = "window"
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    language: str
    max_chars: int = 900

    def message(self, to: str, text: str) -> dict[str, Any]:
        """Meta's template message with `text` as the body's variable {{1}}."""
        param = _SPACES.sub(" ", text).strip() or "…"
        if len(param) > self.max_chars:
            param = param[: self.max_chars - 1].rstrip() + "…"
        body = {"type": "body", "parameters": [{"type": "text", "text": param}]}
        template = {"name": self.name, "language": {"code": self.language}, "components": [body]}
        return {"to": to, "type": "template", "template": template}


def classify(exc: GraphError) -> DeliveryError:
    """The outbox's view of a failed Graph call."""
    wait_ms = int((exc.retry_after or 0) * 1000)
    if exc.throttled:
        return DeliveryError("rate_limited", retry_after_ms=wait_ms)
    if exc.retryable:
        return DeliveryError("network", retry_after_ms=wait_ms)
    if exc.status in (401, 403) or exc.code in (10, 190):  # the token: the operator fixes it
        return DeliveryError("forbidden")
    if exc.code in UNDELIVERABLE or exc.status == 400:
        return DeliveryError("rejected", permanent=True)
    return DeliveryError("unknown")


class WhatsAppOutbox:
    """`deliver` for outbox entries of channel `whatsapp`."""

    def __init__(
        self,
        out: Outgoing,
        store: WhatsAppStore,
        parts: PartLog,
        template: Template | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._out, self._store, self._template, self._clock = out, store, template, clock
        self._parts = parts  # what of an entry's pieces has arrived
        self._once = Backoff().once()

    async def window_open(self, wa_id: str, now_ms: int) -> bool:
        last = await self._store.last_in_ms(wa_id)
        return last is not None and now_ms < last + WINDOW_MS - MARGIN_MS

    async def __call__(self, entry: OutboxEntry) -> None:
        to = entry.chat
        if not WA_ID.fullmatch(to):
            raise DeliveryError("not_found", permanent=True)
        now_ms = int(self._clock() * 1000)
        layout = lay_out(entry.text)
        progress = await Progress.for_entry(self._parts, entry.id)
        try:
            if await self.window_open(to, now_ms):
                try:
                    wamids = await self._out.pieces(to, layout, self._once, progress)
                    await self._sent(entry, wamids[-1] if wamids else "", "text", now_ms)
                    return
                except GraphError as exc:
                    if not exc.window_closed:
                        raise
            rest = [p for k, p in enumerate(layout.pieces) if not progress.settled(k)]
            if not rest:  # every piece has arrived (or may have)
                return
            if self._template is None:
                raise DeliveryError(WAITING, retry_after_ms=WAIT_MS)
            message = self._template.message(to, " ".join(rest) if progress.known else entry.text)
            try:
                wamid = await self._out.client.send(message, self._once)
            except GraphError as exc:
                if not exc.unconfirmed:
                    raise
                log.warning("whatsapp: outbox entry %s may have arrived: %s", entry.id, exc)
                wamid = ""  # recorded as sent: trying again could show it twice
            await self._sent(entry, wamid, "template", now_ms)
        except GraphError as exc:
            if exc.window_closed:  # the template itself was refused as out of the window
                raise DeliveryError(WAITING, retry_after_ms=WAIT_MS) from exc
            raise classify(exc) from exc

    async def _sent(self, entry: OutboxEntry, wamid: str, via: str, now_ms: int) -> None:
        """Record what went out (for its statuses); a failure is logged: it was sent, and
        raising would have the outbox send it again."""
        if wamid:
            try:
                await self._store.sent(wamid, entry.tenant, entry.chat, via, now_ms, entry.id)
            except StorageError as exc:
                log.warning(
                    "whatsapp: outbox entry %s was sent but not recorded: %s", entry.id, exc
                )

    async def notes(self, tenant: str, chat: str, now: float) -> list[str]:
        """What /jobs says of this chat: the window, and what happens outside it."""
        now_ms = int(now * 1000)
        last = await self._store.last_in_ms(chat)
        if last is not None and now_ms < last + WINDOW_MS - MARGIN_MS:
            left = (last + WINDOW_MS - now_ms) // 60_000
            lines = [
                f"WhatsApp: you wrote last {_ago(now_ms - last)}; reminders go out as "
                f"messages for {left // 60} h {left % 60} min more."
            ]
        else:
            lines = [
                "WhatsApp: more than 24 hours since you last wrote, so WhatsApp takes "
                "no free message from me now."
            ]
        if self._template is not None:
            lines.append(
                f"Outside those 24 hours reminders go out as the template "
                f"“{self._template.name}” ({self._template.language})."
            )
        else:
            lines.append(
                "Outside those 24 hours reminders wait until you write again "
                "(no template is configured), at most two days."
            )
        failed = [s for s in await self._store.recent(tenant, chat) if s.status == "failed"]
        if failed:
            lines.append(
                f"WhatsApp reported {len(failed)} recent reminder(s) as not delivered "
                f"(error {failed[0].error})."
            )
        return lines


def _ago(ms: int) -> str:
    minutes = ms // 60_000
    return f"{minutes} min ago" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min ago"
