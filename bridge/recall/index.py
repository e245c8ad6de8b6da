"""One tenant's message index on the `Database`: messages in tables, their terms in a text index.

Rows of `recall_messages` (tenant, id, conversation, msg_id, role, name, time
in ms, source, text) hold everything said in the tenant's chats and everything
imported; `recall_conversations` names a conversation once per tenant;
`recall_speakers` lists the speakers' names of the tenant's messages (so the
search knows which query words are names). A message's terms (its stems,
`bridge.recall.terms.index_terms`, then its speaker's) are document `id` of the
tenant's text index `recall` (`Database.text_index`: FTS5 on SQLite, tsvector
on PostgreSQL, one BM25 contract), so one tenant's search cannot reach
another's rows and `text_index_names` finds it for forget.

Ids count per tenant from 1, in the order messages are stored (the ranking's
"messages around a hit" are the neighbouring ids): a batch is numbered inside
its one INSERT (the tenant's newest id + `row_number()`), the messages already known, by
(conversation, msg_id), left out, so an import can be run twice. On SQLite, whose
transaction holds the write lock, the newest id is read first and a batch is tried as a
plain multi-row INSERT OR IGNORE of ids worked out from it (half the VM steps of the
numbering INSERT: no window, no sorter, no look-up per row; 10 % of the instructions
of a live exchange's indexing); only a batch with a known message (left out: a gap) has
its rows taken out again and goes through the numbering INSERT. The INSERT's rows are
padded to one of a few counts (`ROW_COUNTS`; the padding numbered -1 and never stored), so
its text, and the prepared statement each backend keeps by text, is one of a few instead
of one per batch size (a new one prepared for nearly every batch: 13 % of the
instructions of `add` over batches of 1-64 exchanges). Scoring the
body and the speaker's name as one document gives FTS5's two-column `bm25()`
of the files this replaces exactly (its columns weigh 1 each: term counts and
lengths add up), so the ranking is unchanged.

Writes: a batch is ONE transaction (`Database.atomic`: on SQLite one job on the
writer, BEGIN IMMEDIATE ... COMMIT, or, when `short`, given as the function that
makes it: inline on an idle writer): its INSERT (RETURNING the new ids; on SQLite the
newest id read before it and, when it stored the whole batch, the ids worked out: a
RETURNING row is a step, and a release of the GIL, of its own), the new
messages' documents in the text index (`TextIndex.adding`), the speakers not seen
before; a conversation this object has not seen costs one upsert more, before it. A
crash or a failing statement leaves both parts or neither: no message without its
terms. The documents' terms are made before the transaction, on the caller's thread.
`repair` (run once per tenant and process, before the first write) still finds the
newest messages without terms (an index written before batches were one transaction)
by the counts, read in one statement (another instance's write between two reads looked
like a crash), and adds them again; `drop_stale` removes terms of ids a retention prune
cut off halfway left behind (the next batch's INSERT would reuse those ids: its
transaction fails whole, the stale terms go, it is tried again).
Texts arrive masked: `Indexer` (bridge.recall.indexer) is the one door in.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from bridge.recall.terms import index_terms
from bridge.storage import units
from bridge.storage.errors import IntegrityError, StorageError
from bridge.storage.protocol import Database, TextIndex
from bridge.storage.units import Unit
from bridge.types.tenant_dirs import TenantDirs

TEXT_INDEX = "recall"
_COUNT = "SELECT count(*) FROM recall_messages WHERE tenant = ?"
LEGACY_FILENAME = "index.sqlite"  # the file per tenant the index lived in before (moved)
NEAR = 2000  # ids looked through on either side for a message's neighbours
CHUNK = 500  # rows per statement (placeholders stay far below both backends' limits)
# the batch INSERT's row counts: a batch is padded up to the next one (rows numbered -1,
# which the INSERT leaves out), so the statement's text, and with it the prepared
# statement both backends cache by text, is one of these few instead of one per count
ROW_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, CHUNK)


def legacy_path(dirs: TenantDirs) -> Path:
    """tenants/<tid>/recall/index.sqlite: where the index lived before (bridge.recall.legacy)."""
    return dirs.root.parent / "recall" / LEGACY_FILENAME


@dataclass(frozen=True, slots=True)
class Message:
    """One message to index (text already masked and screened)."""

    conversation: str
    msg_id: str
    role: str
    text: str
    at_ms: int
    source: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class Row:
    """One stored message as search returns it."""

    rowid: int
    conversation: str
    msg_id: str
    role: str
    name: str
    at_ms: int
    source: str
    text: str


_COLUMNS = "m.id, c.name, m.msg_id, m.role, m.name, m.at_ms, m.source, m.text"
_FROM = "recall_messages m JOIN recall_conversations c ON c.tenant = m.tenant AND c.id = m.conv"
_VALUE = "(CAST(? AS BIGINT), CAST(? AS BIGINT), ?, ?, ?, CAST(? AS BIGINT), ?, ?)"
# the rows' numbering (`v`, `base`, `fresh`); {head} before it or after it: SQLite counts
# the rows a statement changed (`rowcount`) only when its text begins with INSERT
_INSERT = """{first}
WITH v (n, conv, msg_id, role, name, at_ms, source, text) AS (VALUES {values}),
base AS (SELECT COALESCE((
    SELECT id FROM recall_messages WHERE tenant = ? ORDER BY id DESC LIMIT 1), 0) AS top),
fresh AS (
    SELECT v.* FROM v WHERE v.n >= 0 AND NOT EXISTS (
        SELECT 1 FROM recall_messages x
        WHERE x.tenant = ? AND x.conv = v.conv AND x.msg_id = v.msg_id))
{then}
SELECT ?, base.top + row_number() OVER (ORDER BY fresh.n), fresh.conv, fresh.msg_id,
    fresh.role, fresh.name, fresh.at_ms, fresh.source, fresh.text
FROM fresh CROSS JOIN base WHERE true
ON CONFLICT DO NOTHING{returning}
"""
_RETURNING = "\nRETURNING id, conv, msg_id"
_TOP = (
    "SELECT COALESCE((SELECT id FROM recall_messages WHERE tenant = ? ORDER BY id DESC LIMIT 1), 0)"
)
_SINCE = "SELECT id, conv, msg_id FROM recall_messages WHERE tenant = ? AND id > ?"
_ABOVE = "DELETE FROM recall_messages WHERE tenant = ? AND id > ?"
_CONVERSATION = """
INSERT INTO recall_conversations (tenant, id, name)
SELECT ?, COALESCE(MAX(id), 0) + 1, ? FROM recall_conversations WHERE tenant = ?
ON CONFLICT (tenant, name) DO UPDATE SET name = excluded.name
RETURNING id
"""
ATTEMPTS = 5  # a new conversation whose id another writer took at once draws again
# a batch whose ids other writers took at once is numbered again, after a short random
# pause (several instances writing one tenant: without it, six writers at once could
# keep taking each other's ids past a handful of tries under load)
NUMBER_ATTEMPTS = 32


# A batch written as the function that makes it when its estimated SQLite VM steps
# (`short`) stay within these and its text within SHORT_CHARS: on SQLite it then runs
# on the loop's thread when the writer is idle, whose budget is about 8,000 steps
# (`storage.sqlite.worker`); a batch the budget cuts is rolled back and made again on
# the writer's thread, so the estimate keeps the loop's time short, nothing more.
# Measured on SQLite 3.40: a message about 200 steps and each of its terms about 50 (20
# messages of 3 words 6,600 steps, 2 of 50 words 5,100, 20 of 10 words 13,400), 0.5-0.6
# ms of CPU at 6,000. Steps do not count bytes: a text of emoji or of one long run (CJK
# without spaces, a hex dump) is 0-1 terms, and two of 100,000 characters held the loop
# 11 ms inline (session 45's attacker, F2), hence the text's own bound.
SHORT_STEPS = 6000
STEPS_PER_MESSAGE = 150
STEPS_PER_TERM = 50
SHORT_CHARS = 16_000  # the batch's texts together (a person's message is at most 16,000)


def short(batch: Sequence[Message], docs: Sequence[str]) -> bool:
    """Whether writing `batch` (its documents `docs`) is estimated to stay within
    `SHORT_STEPS` (a document's terms are separated by single spaces) and its texts
    within `SHORT_CHARS`."""
    if sum(len(m.text) for m in batch) > SHORT_CHARS:
        return False
    terms = sum(d.count(" ") + 1 for d in docs)
    return STEPS_PER_MESSAGE * len(batch) + STEPS_PER_TERM * terms <= SHORT_STEPS


def document(text_terms: str, name_terms: str) -> str:
    """A message's text-index document: its stems, then its speaker's name's."""
    return f"{text_terms} {name_terms}" if name_terms else text_terms


@lru_cache(maxsize=4096)
def _name_terms(name: str) -> tuple[str, ...]:
    return tuple(index_terms(name).split())


def who_terms(role: str, name: str) -> str:
    """The speaker's name and role as terms (the ranking's speaker boost)."""
    return index_terms(f"{name} {role}")


def padded(rows: int) -> int:
    """The smallest of ROW_COUNTS that holds `rows` (at most CHUNK)."""
    return next(size for size in ROW_COUNTS if size >= rows)


@lru_cache(maxsize=2 * len(ROW_COUNTS))
def _insert_sql(size: int, insert: str, returning: bool = True) -> str:
    """The batch INSERT for `size` rows (made once per size), headed by the dialect's
    `insert_skipping` (SQLite keeps no statement journal for it in the transaction);
    `returning`: its new rows' (id, conv, msg_id) come back, one row each."""
    head = f"{insert} recall_messages (tenant, id, conv, msg_id, role, name, at_ms, source, text)"
    return _INSERT.format(
        values=",".join([_VALUE] * size),
        first="" if returning else head,
        then=head if returning else "",
        returning=_RETURNING if returning else "",
    )


@lru_cache(maxsize=len(ROW_COUNTS))
def _plain_sql(size: int, insert: str) -> str:
    """SQLite's batch INSERT of `size` rows, numbered by the caller (`_inserted`)."""
    values = ",".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * size)
    return (
        f"{insert} recall_messages (tenant, id, conv, msg_id, role, name, at_ms, source, text) "
        f"VALUES {values}"
    )


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _documents(messages: Sequence[Message]) -> list[str]:
    """Each message's text-index document (made before its transaction, on the caller's
    thread; a speaker's terms once per name)."""
    names: dict[str, str] = {}
    docs = []
    for m in messages:
        who = names.get(m.name)
        if who is None:
            who = names[m.name] = index_terms(m.name)
        docs.append(document(index_terms(m.text), who))
    return docs


class RecallIndex:
    """One tenant's messages and terms on a `Database` (cheap to make; keeps small caches)."""

    def __init__(self, db: Database, tenant: str) -> None:
        self.db, self.tenant = db, tenant
        self.text: TextIndex = db.text_index(TEXT_INDEX, tenant)
        # what this object wrote or read before, so a live turn's two messages are their
        # INSERT and adds only: a conversation's id never changes once given (its row is
        # never deleted but by forget), a speaker's row stays until a retention prune
        # through this object (which forgets these)
        self._conv_ids: dict[str, int] = {}
        self._speakers: set[str] = set()
        self.repaired = False

    # -- writing ---------------------------------------------------------------------------

    async def add(self, messages: Iterable[Message]) -> int:
        """Store messages (those already known skipped) and index their terms; the count
        added. A short batch on an idle SQLite writer is written inline: the call may
        return without giving the loop a turn, so a loop of calls yields of its own."""
        fresh: dict[tuple[str, str], Message] = {}
        for m in messages:  # a message twice in one batch: the first counts
            fresh.setdefault((m.conversation, m.msg_id), m)
        batch = list(fresh.values())
        added = 0
        for start in range(0, len(batch), CHUNK):
            added += await self._add_chunk(batch[start : start + CHUNK])
        return added

    async def _add_chunk(self, chunk: list[Message]) -> int:
        """Store and index one chunk: each try ONE transaction (`_stored`), the messages its
        INSERT numbered committed together with their terms; messages whose ids another
        writer took at once are numbered again by the next try."""
        convs: dict[str, int] = {}
        for m in chunk:  # known conversations without a coroutine each
            if m.conversation not in convs:
                known = self._conv_ids.get(m.conversation)
                convs[m.conversation] = (
                    known if known is not None else await self.conversation(m.conversation)
                )
        docs = _documents(chunk)
        todo = list(range(len(chunk)))  # positions in the chunk not stored or known yet
        added = 0
        for attempt in range(NUMBER_ATTEMPTS):
            if attempt:
                await asyncio.sleep(random.uniform(0, 0.002 * min(attempt, 10)))
            batch = [chunk[i] for i in todo] if attempt else chunk
            part = [docs[i] for i in todo]
            making = functools.partial(self._stored, batch, convs, part, self._speakers)
            try:
                # a short batch as the function that makes it (SQLite: inline on an idle
                # writer, else committed with the turns' ends queued next to it), a long
                # one as its steps (a job of the writer's thread, never tried inline)
                stored, settled, names = await self.db.atomic(
                    making if short(batch, part) else making()
                )
            except IntegrityError:  # nothing of the try stays
                if not await self.drop_stale():
                    raise
                continue
            added += stored
            self._speakers.update(names)
            if len(settled) == len(todo):
                return added
            done = set(settled)
            todo = [t for n, t in enumerate(todo) if n not in done]
        raise StorageError(f"recall: {len(todo)} messages not numbered (a busy tenant)")

    def _stored(
        self, batch: Sequence[Message], convs: dict[str, int], docs: list[str], seen: set[str]
    ) -> Unit[tuple[int, list[int], list[str]]]:
        """One transaction's steps: the batch's INSERT (the known messages left out), the
        new rows' documents (`docs`, by position) in the text index, the speakers not in
        `seen` (read, never changed, on the writer's thread: a set's C-level difference
        holds the GIL). Its result: how many were stored, the positions in `batch` of
        those stored or known already, and the speakers' names it added."""
        size = padded(len(batch))
        tenant = self.tenant
        dialect = self.db.dialect
        if dialect.name == "sqlite":
            rows = yield from self._inserted(batch, convs, size)
        else:
            sql = _insert_sql(size, dialect.insert_skipping)
            rows = yield units.fetch_all(sql, self._numbered(batch, convs, size))
        at = {(convs[m.conversation], m.msg_id): n for n, m in enumerate(batch)}
        got = sorted((int(ident), at[int(c), str(msg)]) for ident, c, msg in rows)
        settled = [n for _, n in got]
        if len(got) < len(batch):  # known ones (left out by the INSERT), or ids another took
            left = set(at).difference((int(c), str(msg)) for _, c, msg in rows)
            settled += [at[key] for key in (yield from self._known(sorted(left)))]
        if not got:
            return 0, settled, []
        yield from self.text.adding([(ident, docs[n]) for ident, n in got])
        names = sorted({batch[n].name for _, n in got}.difference(seen))
        if names:
            values = ",".join(["(?, ?)"] * len(names))
            yield units.execute(
                f"INSERT INTO recall_speakers (tenant, name) VALUES {values} "
                "ON CONFLICT DO NOTHING",
                [x for n in names for x in (tenant, n)],
            )
        return len(got), settled, names

    def _inserted(
        self,
        batch: Sequence[Message],
        convs: dict[str, int],
        size: int,
    ) -> Unit[list[Any]]:
        """SQLite's batch INSERT: the rows it stored as (id, conv, msg_id), as its RETURNING
        gives them, in three steps instead of one a row (each row of a RETURNING is a step
        of its own, and a release of the GIL by the writer's thread that a busy event loop
        may keep up to its switch interval). The transaction holds SQLite's write lock, so
        the newest id read before is the one the batch counts from: the message at
        position k gets that id + 1 + k, given by a plain multi-row INSERT OR IGNORE (the
        padding: the last row again, which its ids leave out). When it stored every
        message (a live turn's batch: none is known) that is the numbering of `_INSERT`
        at half its steps (no window, no sorter, no look-up per row: the unique index
        checks); otherwise (known messages left out, leaving gaps) its rows are taken out
        again and `_INSERT` numbers the batch, whose rows above that id are read back."""
        row = yield units.fetch_one(_TOP, (self.tenant,))
        top = int(row[0]) if row is not None else 0
        tenant = self.tenant
        rows: list[object] = []
        for k, m in enumerate(batch):
            rows += [tenant, top + 1 + k, convs[m.conversation], m.msg_id, m.role, m.name]
            rows += [m.at_ms, m.source, m.text]
        rows += rows[-9:] * (size - len(batch))
        insert = self.db.dialect.insert_skipping
        stored = yield units.execute(_plain_sql(size, insert), rows)
        if stored == len(batch):
            return [(top + 1 + k, convs[m.conversation], m.msg_id) for k, m in enumerate(batch)]
        if stored:
            yield units.execute(_ABOVE, (tenant, top))
        numbered = self._numbered(batch, convs, size)
        yield units.execute(_insert_sql(size, insert, returning=False), numbered)
        since: list[Any] = yield units.fetch_all(_SINCE, (self.tenant, top))
        return since

    def _numbered(
        self, batch: Sequence[Message], convs: dict[str, int], size: int
    ) -> tuple[object, ...]:
        """The arguments of `_INSERT` for `batch` padded to `size` rows."""
        args: list[object] = []
        for n, m in enumerate(batch):
            args += [n, convs[m.conversation], m.msg_id, m.role, m.name, m.at_ms, m.source, m.text]
        # padding: the last row again, numbered -1 (typed as a real row on both backends)
        args += [-1, *args[-7:-1], ""] * (size - len(batch))
        tenant = self.tenant
        return (*args, tenant, tenant, tenant)

    def _known(self, keys: list[tuple[int, str]]) -> Unit[list[tuple[int, str]]]:
        """Which of (conversation id, msg_id) are stored already."""
        convs, ids = sorted({c for c, _ in keys}), sorted({m for _, m in keys})
        rows = yield units.fetch_all(
            "SELECT conv, msg_id FROM recall_messages WHERE tenant = ? "
            f"AND conv IN ({_marks(len(convs))}) AND msg_id IN ({_marks(len(ids))})",
            (self.tenant, *convs, *ids),
        )
        wanted = set(keys)
        return [(int(c), str(m)) for c, m in rows if (int(c), str(m)) in wanted]

    async def drop_stale(self) -> int:
        """Remove the terms of documents above the tenant's newest message that no message
        holds (a retention prune cut off between its DELETE and the terms' removal: the
        next batch's ids would be theirs); how many. A document found is checked against
        the rows by a later statement: a batch's rows and terms commit together, so one
        committed meanwhile is seen with its row and kept."""
        top = await self.db.fetch_value(
            "SELECT id FROM recall_messages WHERE tenant = ? ORDER BY id DESC LIMIT 1",
            (self.tenant,),
        )
        after, dropped = int(top or 0), 0
        while found := await self.text.documents(after, CHUNK):
            ids = [doc for doc, _ in found]
            held = await self.speakers(ids)
            for doc in ids:
                if doc not in held and await self.text.remove(doc):
                    dropped += 1
            after = ids[-1]
        return dropped

    async def conversation(self, name: str) -> int:
        """The conversation's id in this tenant (made on first use): one upsert, then cached.
        Two writers naming two new conversations at once may draw one id: the loser draws
        again."""
        known = self._conv_ids.get(name)
        for attempt in range(ATTEMPTS):
            if known is not None:
                break
            try:
                got = await self.db.fetch_value(_CONVERSATION, (self.tenant, name, self.tenant))
            except IntegrityError:
                if attempt == ATTEMPTS - 1:
                    raise
                continue
            known = self._conv_ids[name] = int(got)
        assert known is not None
        return known

    async def repair(self) -> int:
        """Index the terms of the newest messages a crash left without (the counts differ);
        returns how many were added again. Run before this process's first write."""
        self.repaired = True
        # one statement: another instance writing between two reads would look like a crash
        have, want = await self.text.count_with(_COUNT, (self.tenant,))
        done, below = 0, None
        while have < want:
            where = "" if below is None else " AND m.id < ?"
            args: tuple[object, ...] = (self.tenant,) + (() if below is None else (below,))
            rows = await self.db.fetch_all(
                f"SELECT m.id, m.name, m.text FROM recall_messages m WHERE m.tenant = ?{where} "
                f"ORDER BY m.id DESC LIMIT {CHUNK}",
                args,
            )
            if not rows:
                break
            for ident, _, _ in rows:
                await self.text.remove(int(ident))
            await self.text.add_many(
                [(int(i), document(index_terms(t), index_terms(n))) for i, n, t in rows]
            )
            done += len(rows)
            below = int(rows[-1][0])
            have, want = await self.text.count_with(_COUNT, (self.tenant,))
        return done

    async def delete_before(self, cutoff_ms: int) -> int:
        """Remove messages older than `cutoff_ms` (retention); returns how many.

        The rows go first (one DELETE), then their terms and vectors: a crash between leaves
        terms of messages that are gone, which a search cannot read back and drops."""
        gone = await self.db.fetch_all(
            "DELETE FROM recall_messages WHERE tenant = ? AND at_ms < ? RETURNING id",
            (self.tenant, cutoff_ms),
        )
        return await self._removed([int(ident) for (ident,) in gone])

    async def delete_span(self, name: str, first_ms: int, last_ms: int) -> int:
        """Remove the messages of conversation `name` stored from `first_ms` to `last_ms`
        (both included; a chat's conversation deleted by its person); returns how many."""
        conv = await self.db.fetch_value(
            "SELECT id FROM recall_conversations WHERE tenant = ? AND name = ?",
            (self.tenant, name),
        )
        if conv is None:
            return 0
        gone = await self.db.fetch_all(
            "DELETE FROM recall_messages WHERE tenant = ? AND conv = ?"
            " AND at_ms >= ? AND at_ms <= ? RETURNING id",
            (self.tenant, int(conv), first_ms, last_ms),
        )
        return await self._removed([int(ident) for (ident,) in gone])

    async def _removed(self, gone: list[int]) -> int:
        """The terms and vectors of deleted messages `gone`, and speakers no message has."""
        if not gone:
            return 0
        for ident in gone:
            await self.text.remove(ident)
        await self.db.execute(
            "DELETE FROM recall_vectors WHERE tenant = ? AND NOT EXISTS (SELECT 1 FROM "
            "recall_messages m WHERE m.tenant = recall_vectors.tenant "
            "AND m.id = recall_vectors.id)",
            (self.tenant,),
        )
        await self.db.execute(  # a name none of the kept messages carries goes too
            "DELETE FROM recall_speakers WHERE tenant = ? AND NOT EXISTS (SELECT 1 FROM "
            "recall_messages m WHERE m.tenant = recall_speakers.tenant "
            "AND m.name = recall_speakers.name)",
            (self.tenant,),
        )
        self._speakers.clear()
        return len(gone)

    async def drop(self) -> None:
        """Every row and term of the tenant (forget)."""
        for table in ("recall_messages", "recall_conversations", "recall_speakers"):
            await self.db.execute(f"DELETE FROM {table} WHERE tenant = ?", (self.tenant,))
        await self.db.execute("DELETE FROM recall_vectors WHERE tenant = ?", (self.tenant,))
        await self.db.execute("DELETE FROM recall_vector_model WHERE tenant = ?", (self.tenant,))
        await self.text.drop()
        self._conv_ids.clear()
        self._speakers.clear()

    # -- reading ---------------------------------------------------------------------------

    async def speaker_terms(self) -> frozenset[str]:
        """The terms of every speaker's name the index has seen (a few rows)."""
        names = await self.db.fetch_all(
            "SELECT name FROM recall_speakers WHERE tenant = ?", (self.tenant,)
        )
        return frozenset(t for (name,) in names for t in _name_terms(str(name)))

    async def doc_freq(self, terms: list[str], cap: int) -> dict[str, int]:
        """How many messages hold each term, counted up to `cap` (the work stays bounded)."""
        found = await self.text.doc_freq(terms, cap)
        return {t: found.get(t, 0) for t in terms}

    async def newest_bound(self, terms: list[str], count: int) -> int | None:
        """The id of the `count`-th newest message holding any of `terms` (None: fewer)."""
        return await self.text.nth_newest(terms, count)

    async def bm25(
        self, terms: list[str], limit: int, min_doc: int | None = None
    ) -> list[tuple[int, float]]:
        """(id, bm25) of the best `limit` messages holding any term, best first."""
        return await self.text.search(terms, limit, min_doc=min_doc)

    async def count(self) -> int:
        got = await self.db.fetch_value(_COUNT, (self.tenant,))
        return int(got or 0)

    async def text_bytes(self) -> int:
        """UTF-8 bytes of all stored texts (what the index's size is measured against)."""
        rows = await self.db.fetch_all(
            "SELECT text FROM recall_messages WHERE tenant = ?", (self.tenant,)
        )
        return sum(len(str(t).encode()) for (t,) in rows)

    async def rows(self, rowids: Iterable[int]) -> dict[int, Row]:
        ids = list(rowids)
        found: dict[int, Row] = {}
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            where = f"m.tenant = ? AND m.id IN ({_marks(len(chunk))})"
            sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE {where}"
            for r in await self.db.fetch_all(sql, (self.tenant, *chunk)):
                found[int(r[0])] = Row(*r)
        return found

    async def speakers(self, rowids: Iterable[int]) -> dict[int, tuple[int, str, str]]:
        """id -> (conversation id, role, name): what the ranking needs, not the text."""
        ids = list(rowids)
        found: dict[int, tuple[int, str, str]] = {}
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            sql = (
                "SELECT id, conv, role, name FROM recall_messages "
                f"WHERE tenant = ? AND id IN ({_marks(len(chunk))})"
            )
            for r in await self.db.fetch_all(sql, (self.tenant, *chunk)):
                found[int(r[0])] = (int(r[1]), str(r[2]), str(r[3]))
        return found

    async def neighbours(self, row: Row, before: int, after: int) -> tuple[list[Row], list[Row]]:
        """Up to `before` messages stored just before `row` in its conversation, and `after`
        after (looked for among the NEAR ids on either side: a conversation's messages are
        stored in order, interleaved only with the tenant's other chats at the same time)."""
        conv = "(SELECT conv FROM recall_messages WHERE tenant = ? AND id = ?)"
        where = f"m.tenant = ? AND m.id BETWEEN ? AND ? AND m.conv = {conv}"
        prev = await self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE {where} ORDER BY m.id DESC LIMIT ?",
            (self.tenant, row.rowid - NEAR, row.rowid - 1, self.tenant, row.rowid, before),
        )
        nxt = await self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE {where} ORDER BY m.id LIMIT ?",
            (self.tenant, row.rowid + 1, row.rowid + NEAR, self.tenant, row.rowid, after),
        )
        return [Row(*r) for r in reversed(prev)], [Row(*r) for r in nxt]

    async def iter_all(self) -> AsyncIterator[Row]:
        """Every message, in the order stored (the export), read CHUNK rows at a time."""
        after = 0
        while True:
            rows = await self.db.fetch_all(
                f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.tenant = ? AND m.id > ? "
                f"ORDER BY m.id LIMIT {CHUNK}",
                (self.tenant, after),
            )
            for r in rows:
                yield Row(*r)
            if len(rows) < CHUNK:
                return
            after = int(rows[-1][0])
