"""The one door into every tenant's message index: screen, mask, then store.

`Indexer.admit(dirs, messages)` is the only way a text reaches the index
(live turns, scheduled answers, imports alike): a text the secret screen
finds a credential in (`screen`: the app passes
`bridge.screening.screen.secret_kinds`) is refused whole (counted, never stored);
every other text goes through the tenant's vault `Masker` (every spelling of
every value becomes `[vault:NAME]`) before it is written. `clean` is that
single step, so a central masking point can replace it in one place; a text
that is `Masked` already (a stored turn's, masked by the turn with the same
vault masker right before) is screened but not masked again.
`record_exchange` is what the turn calls after it stored an exchange (the
core's `ExchangeLog` protocol): it only queues the exchange (no statement on
the reply's path) and one task per `Indexer` writes the queue in order
through the `Database`, so one chat's messages keep their order and each
tenant's are numbered in the order they were answered. The task lets
exchanges gather for up to `LINGER_S` (or `MAX_BATCH` of them) and writes
each tenant's as one `admit` (one transaction: the INSERT and its text index commit
together; the statements of a turn's indexing shrink with load instead of growing
with it).
It never raises into the turn: an index that cannot be written is logged and
the answer goes on. A message that cannot be stored (a text that is no valid
Unicode: a lone surrogate) costs only itself: it is skipped with a WARNING that
does not show it and the rest of its batch is written (a batch that fails for
another reason is written again one message at a time). `settled()` cuts the
wait short and waits until what was queued is written (a search awaits it
first: `/recall` right after a message finds it); `aclose()` writes what is
queued and ends the task. A process killed meanwhile loses its queued
exchanges from the index (at most `LINGER_S` of them; they stay in the
session store). With `[recall] retention_days`
set, it also drops older messages, at most once a day per tenant.
`unindex` takes out a chat's conversation its person deleted (its time span).
`index(dirs)` is the tenant's `RecallIndex` (made once and kept): its first
use moves the tenant's index file of before (`bridge.recall.legacy`) into the
`Database` and adds terms a crash left unwritten (`RecallIndex.repair`).
`listen` registers who is told that a tenant has new rows (the vectors'
backfill).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from bridge.recall.index import Message, RecallIndex
from bridge.recall.legacy import move_legacy
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database
from bridge.types.masked import Masked
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)
MAX_TEXT = 100_000  # a longer message is masked whole, then indexed by its first 100,000
DAY_MS = 86_400_000
GROUP = 32  # messages screened together; a group with a finding is screened one by one
LINGER_S = 0.05  # how long queued exchanges wait for more before they are written
# Exchanges written together at most: one screening group's messages, one short
# transaction, so a turn's end unit queued behind it on SQLite's writer waits for
# little (64 exchanges, 128 messages, held the writer ~3 ms: a turn's p99 4.4-4.8
# ms against 2.6-3.0 at 16, for about 0.03 ms more of the writer's CPU a turn).
MAX_BATCH = GROUP // 2


Screen = Callable[[str], list[str]]  # the secret screen: the kinds of credential in a text
Exchange = tuple[TenantDirs, tuple[Message, Message]]


def _no_screen(text: str) -> list[str]:
    return []


def _screened_together(screen: Screen, group: list[Message]) -> bool:
    """True when the screen finds nothing in the group's texts joined by blank lines.

    The screen's rules look at a text's own characters and a short window
    after a keyword, so what it finds in one message it finds in the joined
    text too: a clean group is clean message by message (tested)."""
    return not screen("\n\n".join(m.text[:MAX_TEXT] for m in group))


@dataclass(frozen=True, slots=True)
class Admitted:
    added: int  # new rows
    known: int  # already in the index (same conversation and id)
    refused: int  # held a credential: not stored
    skipped: int = 0  # could not be stored (not valid Unicode): logged, not stored


def _storable(m: Message) -> bool:
    """False when a text of `m` is not valid Unicode (a lone surrogate, from a JSON
    `\\ud800` escape): the database refuses it, and with it the whole batch. Texts all
    ASCII (a flag each, looked at in C: no copy, no frame) say so at once."""
    texts = (m.conversation, m.msg_id, m.role, m.text, m.source, m.name)
    try:
        if all(map(str.isascii, texts)):
            return True
    except TypeError:  # not all text: each is looked at
        pass
    try:
        for text in texts:
            # anything else is the database's to refuse; ASCII is valid (a flag: no copy)
            if isinstance(text, str) and not text.isascii():
                text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Indexer:
    def __init__(
        self,
        db: Database,
        mask: Callable[[TenantDirs, str], str] | None = None,
        enabled: bool = True,
        screen: Screen = _no_screen,
        retention_days: int = 0,
    ) -> None:
        self.db = db
        self._mask = mask
        self._screen = screen
        self._retention_ms = retention_days * DAY_MS  # 0: keep everything
        self._pruned: dict[str, int] = {}  # tenant -> when its index was last pruned
        self.enabled = enabled
        self._open: dict[str, RecallIndex] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        self._listeners: list[Callable[[TenantDirs], None]] = []
        self._queue: list[Exchange] = []
        self._wake = asyncio.Event()
        self._hurry = asyncio.Event()  # write what is queued now (settled, a full batch)
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None

    def listen(self, added: Callable[[TenantDirs], None]) -> None:
        """Call `added(dirs)` (on the event loop) after rows were added for a tenant."""
        self._listeners.append(added)

    async def index(self, dirs: TenantDirs) -> RecallIndex:
        """The tenant's index (made once; its first use moves an index file of before and
        adds terms a crash left unwritten)."""
        found = self._open.get(dirs.tenant)
        if found is not None:
            return found
        lock = self._opening.setdefault(dirs.tenant, asyncio.Lock())
        async with lock:
            found = self._open.get(dirs.tenant)
            if found is None:
                found = RecallIndex(self.db, dirs.tenant)
                await move_legacy(found, dirs)
                if await found.repair():
                    log.warning("recall: terms a crash left unwritten were added again")
                self._open[dirs.tenant] = found
            return found

    async def unindex(
        self, dirs: TenantDirs, channel: str, chat: str, started: float, archived: float
    ) -> int:
        """Remove what a chat's conversation said, stored from `started` to `archived`
        (seconds; the conversation deleted by its person): its exchanges still queued are
        written first, so none lands after. Returns how many messages went."""
        await self.settled()
        index = await self.index(dirs)
        first, last = int(started * 1000), int(archived * 1000) + 1  # a reply is at + 1 ms
        return await index.delete_span(f"{channel}:{chat}", first, last)

    async def settled(self) -> None:
        """Return once every exchange queued before the call is written (or failed)."""
        while self._queue or not self._idle.is_set():
            self._hurry.set()
            await self._idle.wait()

    async def aclose(self) -> None:
        """Write what is queued, then end the writing task."""
        if self._task is not None:
            await self.settled()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def clean(
        self,
        dirs: TenantDirs,
        text: str,
        screened: bool = False,
        mask: Callable[[str], str] | None = None,
    ) -> str | None:
        """The text as it may be stored, or None when it must not be (a credential in it).

        `screened`: the text was part of a group the screen found nothing in;
        `mask`: the tenant's mask step, looked up once for a batch (`_batch_mask`)."""
        if isinstance(text, Masked) and len(text) <= MAX_TEXT:
            # already through the tenant's masker (a stored turn's text): screened only
            return None if not screened and self._screen(text) else text
        if not screened and self._screen(text[:MAX_TEXT]):
            return None
        # masked whole, then cut: a value across the cut is masked, not kept as its start
        if mask is not None:
            return mask(text)[:MAX_TEXT]
        if self._mask is None:
            return text[:MAX_TEXT]
        return self._mask(dirs, text)[:MAX_TEXT]

    def _batch_mask(self, dirs: TenantDirs) -> Callable[[str], str] | None:
        """The mask step for one batch: a mask with `bind` (the vault's) is looked up once."""
        bind = getattr(self._mask, "bind", None)
        return bind(dirs) if callable(bind) else None

    async def admit(self, dirs: TenantDirs, messages: Iterable[Message]) -> Admitted:
        """Screen, mask and store `messages` (`RecallIndex.add`)."""
        kept: list[Message] = []
        refused = skipped = 0
        batch = []
        for m in messages:
            if _storable(m):
                batch.append(m)
            else:  # its content stays out of the log
                skipped += 1
                log.warning(
                    "recall index: a %s message skipped: its text is not valid Unicode", m.role
                )
        plain = any(not isinstance(m.text, Masked) for m in batch)
        mask = self._batch_mask(dirs) if plain else None
        for start in range(0, len(batch), GROUP):
            group = batch[start : start + GROUP]
            screened = _screened_together(self._screen, group)
            for m in group:
                text = self.clean(dirs, m.text, screened=screened, mask=mask)
                if text is None:
                    refused += 1
                elif text and not text.isspace():  # not blank (no stripped copy)
                    kept.append(m if text == m.text else replace(m, text=text))
        added = await (await self.index(dirs)).add(kept) if kept else 0
        if added:
            for tell in self._listeners:
                tell(dirs)
        return Admitted(added, len(kept) - added, refused, skipped)

    def record_exchange(
        self,
        dirs: TenantDirs,
        channel: str,
        chat: str,
        msg_id: str,
        asked: str,
        answer: str,
        at: float,
        name: str = "",
    ) -> None:
        """Queue one stored exchange for the index (the turn's hook, on the event loop): no
        statement here; the writing task stores it in order. Never raises."""
        if not self.enabled:
            return
        at_ms = int(at * 1000)
        conversation = f"{channel}:{chat}"
        pair = (
            Message(conversation, msg_id, "user", asked, at_ms, channel, name),
            Message(conversation, f"{msg_id}:reply", "assistant", answer, at_ms + 1, channel),
        )
        self._queue.append((dirs, pair))
        self._idle.clear()
        self._wake.set()
        if len(self._queue) >= MAX_BATCH:
            self._hurry.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="recall-index")

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._hurry.is_set():  # let more exchanges gather (settled() cuts it)
                timer = loop.call_later(LINGER_S, self._hurry.set)
                try:
                    await self._hurry.wait()
                finally:
                    timer.cancel()
            self._hurry.clear()
            while self._queue:
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                for dirs, messages in _by_tenant(batch):
                    # a short write is inline (no await suspends): the loop's other
                    # tasks get a turn between two tenants' writes (64 tenants back to
                    # back held it 14 ms; session 45's attacker, F4)
                    await asyncio.sleep(0)
                    await self._write(dirs, messages)
            self._idle.set()

    async def _write(self, dirs: TenantDirs, messages: list[Message]) -> None:
        """One tenant's part of a batch, then its prune. Never raises: a bug must not end
        the task for every tenant."""
        try:
            await self.admit(dirs, messages)
        except (OSError, StorageError) as exc:
            log.error("recall index not written (%s); the answer went on", exc)
            return
        except Exception:
            await self._one_by_one(dirs, messages)
        try:
            await self._prune(dirs, max(m.at_ms for m in messages))
        except (OSError, StorageError) as exc:
            log.error("recall index not pruned (%s)", exc)
        except Exception:
            log.exception("recall index: unexpected failure")

    async def _one_by_one(self, dirs: TenantDirs, messages: list[Message]) -> None:
        """A tenant's batch failed for no known reason: its messages are written one at a
        time, so one that cannot be stored costs only itself (logged without its content);
        the messages the failed batch wrote already are known and not stored twice."""
        for m in messages:
            await asyncio.sleep(0)  # a short write is inline: the loop gets a turn
            try:
                await self.admit(dirs, [m])
            except (OSError, StorageError) as exc:
                log.error("recall index not written (%s); the answer went on", exc)
                return
            except Exception as exc:
                log.warning("recall index: a %s message skipped (%s)", m.role, type(exc).__name__)

    async def _prune(self, dirs: TenantDirs, now_ms: int) -> None:
        """With a retention set, drop messages older than it (at most once a day per tenant)."""
        if self._retention_ms <= 0 or now_ms - self._pruned.get(dirs.tenant, 0) < DAY_MS:
            return
        self._pruned[dirs.tenant] = now_ms
        removed = await (await self.index(dirs)).delete_before(now_ms - self._retention_ms)
        if removed:
            log.info("recall: %d messages past the retention removed", removed)


def _by_tenant(batch: list[Exchange]) -> list[tuple[TenantDirs, list[Message]]]:
    """The batch's messages per tenant, each tenant's in the order they were queued."""
    grouped: dict[str, tuple[TenantDirs, list[Message]]] = {}
    for dirs, pair in batch:
        grouped.setdefault(dirs.tenant, (dirs, []))[1].extend(pair)
    return list(grouped.values())
