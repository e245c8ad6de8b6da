"""A short recall batch is written on the loop's thread by an idle SQLite writer.

Given as the function that makes it (`Database.atomic`), a batch that
`index.short` estimates within the inline budget runs inline: no job on the
writer's thread (whose statements each hand the GIL to and fro with a busy loop
while turns' end units queue behind the batch); a long one goes to the thread
as its steps, never tried inline first (a batch the budget cut would be rolled
back and made again on the thread: the loop's time spent for nothing), and so
does one of long texts whose steps the estimate cannot see. The estimate holds:
a batch it calls short is not cut. Ids and hits are what they were. The
indexer gives the loop a turn between two tenants' writes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bridge.recall.index import Message, _documents, short
from bridge.recall.indexer import Indexer
from bridge.recall.search import search
from bridge.types.tenant_dirs import TenantDirs
from tests.recall.conftest import Traced
from tests.storage.traced import traced


def _pairs(first: int, count: int, words: int) -> list[Message]:
    out = []
    for n in range(first, first + count):
        text = " ".join(f"word{n}x{k}" for k in range(words))
        conv = f"web:c{n % 3}"
        out += [
            Message(conv, str(n), "user", f"topic{n} {text}", 1_000 + n, "web", "Ann"),
            Message(conv, f"{n}:reply", "assistant", f"reply{n} {text}", 1_001 + n, "web"),
        ]
    return out


async def test_short_batches_run_inline_and_are_never_cut(traced_index: Traced) -> None:
    db, statements, indexer, dirs = traced_index
    await indexer.admit(dirs, _pairs(0, 3, 1))  # conversations and speakers known
    first = 100
    for count, words in ((1, 1), (1, 20), (4, 2), (8, 1), (8, 3), (10, 1), (2, 12), (1, 50)):
        batch = _pairs(first, count, words)
        assert short(batch, _documents(batch)), (count, words)
        statements.clear()
        inlined = db._writer.inlined_writes
        assert (await indexer.admit(dirs, batch)).added == 2 * count
        assert db._writer.inlined_writes == inlined + 1, (count, words)  # on this thread
        assert "ROLLBACK" not in statements, (count, words)  # within the budget: not cut
        index = await indexer.index(dirs)
        hits = await search(index, f"topic{first}", 5)
        assert hits[0].row.msg_id == str(first)
        first += 100
    rows = await db.fetch_all("SELECT id FROM recall_messages WHERE tenant = 't' ORDER BY id")
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))


async def test_a_long_batch_goes_to_the_writers_thread_untried(traced_index: Traced) -> None:
    db, statements, indexer, dirs = traced_index
    await indexer.admit(dirs, _pairs(0, 3, 1))
    batch = _pairs(100, 16, 40)
    assert not short(batch, _documents(batch))
    statements.clear()
    inlined = db._writer.inlined_writes
    assert (await indexer.admit(dirs, batch)).added == 32
    assert db._writer.inlined_writes == inlined
    assert "ROLLBACK" not in statements  # not begun inline and cut by the budget first


def test_a_batch_of_long_texts_with_few_terms_is_not_short() -> None:
    """Steps do not count bytes: a text of emoji or one long run of letters is 0-1 terms,
    and two of 100,000 characters held the loop 11 ms written inline (session 45's
    attacker, F2)."""
    emoji = "🦭" * 17_000
    batch = [
        Message("web:c", "1", "user", emoji, 1_000, "web", "Ann"),
        Message("web:c", "1:reply", "assistant", "ok", 1_001, "web"),
    ]
    assert short(batch[:1] + batch[1:], ["", "ok"]) is False
    assert short([batch[1]], ["ok"]) is True
    hexdump = "ab12" * 4_001  # one 16,004-character word
    assert not short([Message("web:c", "2", "user", hexdump, 1_002, "web")], ["ab12"])


async def test_the_indexer_gives_the_loop_a_turn_between_tenants(tmp_path: Path) -> None:
    """Each tenant's short batch is written inline, without suspending: queued back to
    back for many tenants, the loop's other tasks waited for all of them (64 tenants
    held it 14 ms; session 45's attacker, F4)."""
    db, _ = await traced(tmp_path / "roost.db")
    indexer = Indexer(db)
    try:
        tenants = [TenantDirs.of(tmp_path, f"t{i}") for i in range(8)]
        for dirs in tenants:  # each tenant's tables and speakers made: later writes short
            await indexer.admit(dirs, _pairs(0, 1, 1))
        turns: list[int] = []

        async def other_task() -> None:
            while True:
                turns.append(len(turns))
                await asyncio.sleep(0)

        for n, dirs in enumerate(tenants):
            indexer.record_exchange(dirs, "web", "c0", f"m{n}", "hello there", "hi", 2.0 + n)
        ticking = asyncio.create_task(other_task())
        await asyncio.sleep(0)
        written = db._writer.inlined_writes
        await indexer.settled()
        wrote = db._writer.inlined_writes - written
        ticking.cancel()
        assert wrote == len(tenants)  # each tenant's batch inline, on the loop's thread
        during = len(turns)
        assert during > len(tenants), during  # the loop's other task ran between them
    finally:
        await indexer.aclose()
        await db.aclose()
