"""The one door into every tenant's message index: screen, mask, then store.

`Indexer.admit(dirs, messages)` is the only way a text reaches an index file
(live turns, scheduled answers, imports alike): a text the secret screen
finds a credential in (`screen`: the app passes
`bridge.screening.screen.secret_kinds`) is refused whole (counted, never stored);
every other text goes through the tenant's vault `Masker` (every spelling of
every value becomes `[vault:NAME]`) before it is written. `clean` is that
single step, so a central masking point can replace it in one place; a text
that is `Masked` already (a stored turn's, masked by the turn with the same
vault masker right before) is screened but not masked again.
`record_exchange` is what the turn calls after it stored an exchange (the
core's `ExchangeLog` protocol); it never raises into the turn: an index that
cannot be written is logged and the answer goes on. With `[recall]
retention_days` set, it also drops older messages, at most once a day.
Connections are opened lazily, one per tenant, and kept; `close()` ends them.
Searches read through `reading(dirs)`: a second connection per tenant (WAL: a
reader never waits for the writer), used by one search thread at a time, so
a search runs off the event loop while the loop goes on writing. `listen`
registers who is told that a tenant has new rows (the vectors' backfill).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from bridge.recall.index import Message, RecallIndex, index_path
from bridge.types.masked import Masked
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)
MAX_TEXT = 100_000  # a longer message is indexed by its first 100,000 characters
DAY_MS = 86_400_000
GROUP = 32  # messages screened together; a group with a finding is screened one by one


Screen = Callable[[str], list[str]]  # the secret screen: the kinds of credential in a text


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


class Indexer:
    def __init__(
        self,
        mask: Callable[[TenantDirs, str], str] | None = None,
        enabled: bool = True,
        screen: Screen = _no_screen,
        retention_days: int = 0,
    ) -> None:
        self._mask = mask
        self._screen = screen
        self._retention_ms = retention_days * DAY_MS  # 0: keep everything
        self._pruned: dict[str, int] = {}  # tenant root -> when its index was last pruned
        self.enabled = enabled
        self._open: dict[str, RecallIndex] = {}
        self._readers: dict[str, tuple[RecallIndex, threading.Lock]] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[TenantDirs], None]] = []

    def listen(self, added: Callable[[TenantDirs], None]) -> None:
        """Call `added(dirs)` (on the caller's thread) after rows were added for a tenant."""
        self._listeners.append(added)

    def index(self, dirs: TenantDirs) -> RecallIndex:
        """The tenant's index (opened once, created on first use)."""
        key = str(dirs.root)
        with self._lock:
            found = self._open.get(key)
            if found is None:
                found = RecallIndex.open(index_path(dirs))
                self._open[key] = found
            return found

    @contextlib.contextmanager
    def reading(self, dirs: TenantDirs) -> Iterator[RecallIndex]:
        """The tenant's reading connection, held by one thread at a time (searches)."""
        key = str(dirs.root)
        with self._lock:
            found = self._readers.get(key)
            if found is None:
                found = self._readers[key] = (RecallIndex.open(index_path(dirs)), threading.Lock())
        with found[1]:
            yield found[0]

    def forget(self, dirs: TenantDirs) -> None:
        """Close the tenant's connections (before its files are removed)."""
        with self._lock:
            found = self._open.pop(str(dirs.root), None)
            reader = self._readers.pop(str(dirs.root), None)
        for index in (found, reader[0] if reader else None):
            if index is not None:
                index.close()

    def close(self) -> None:
        with self._lock:
            opened, self._open = list(self._open.values()), {}
            readers, self._readers = [r for r, _ in self._readers.values()], {}
        for index in opened + readers:
            index.close()

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
        text = text[:MAX_TEXT]
        if not screened and self._screen(text):
            return None
        if mask is not None:
            return mask(text)
        if self._mask is None:
            return text
        return self._mask(dirs, text)

    def _batch_mask(self, dirs: TenantDirs) -> Callable[[str], str] | None:
        """The mask step for one batch: a mask with `bind` (the vault's) is looked up once."""
        bind = getattr(self._mask, "bind", None)
        return bind(dirs) if callable(bind) else None

    def admit(self, dirs: TenantDirs, messages: Iterable[Message]) -> Admitted:
        """Screen, mask and store `messages` in one transaction."""
        kept: list[Message] = []
        refused = 0
        batch = list(messages)
        plain = any(not isinstance(m.text, Masked) for m in batch)
        mask = self._batch_mask(dirs) if plain else None
        for start in range(0, len(batch), GROUP):
            group = batch[start : start + GROUP]
            screened = _screened_together(self._screen, group)
            for m in group:
                text = self.clean(dirs, m.text, screened=screened, mask=mask)
                if text is None:
                    refused += 1
                elif text.strip():
                    kept.append(m if text == m.text else replace(m, text=text))
        added = self.index(dirs).add(kept) if kept else 0
        if added:
            for tell in self._listeners:
                tell(dirs)
        return Admitted(added, len(kept) - added, refused)

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
        """Index one stored exchange (the turn's hook); failures are logged, never raised."""
        if not self.enabled:
            return
        at_ms = int(at * 1000)
        conversation = f"{channel}:{chat}"
        pair = (
            Message(conversation, msg_id, "user", asked, at_ms, channel, name),
            Message(conversation, f"{msg_id}:reply", "assistant", answer, at_ms + 1, channel),
        )
        try:
            self.admit(dirs, pair)
            self._prune(dirs, at_ms)
        except (OSError, sqlite3.Error) as exc:
            log.error("recall index not written (%s); the answer goes on", exc)

    def _prune(self, dirs: TenantDirs, now_ms: int) -> None:
        """With a retention set, drop messages older than it (at most once a day per tenant)."""
        key = str(dirs.root)
        if self._retention_ms <= 0 or now_ms - self._pruned.get(key, 0) < DAY_MS:
            return
        self._pruned[key] = now_ms
        removed = self.index(dirs).delete_before(now_ms - self._retention_ms)
        if removed:
            log.info("recall: %d messages past the retention removed", removed)
