"""A short recall batch is written on the loop's thread by an idle SQLite writer.

Given as the function that makes it (`Database.atomic`), a batch that
`index.short` estimates within the inline budget runs inline: no job on the
writer's thread (whose statements each hand the GIL to and fro with a busy loop
while turns' end units queue behind the batch); a long one goes to the thread
as its steps, never tried inline first (a batch the budget cut would be
written twice, once for nothing). The estimate holds: a batch it calls short
is not cut. Ids and hits are what they were.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.recall.index import Message, _documents, short
from bridge.recall.indexer import Indexer
from bridge.recall.search import search
from bridge.storage.sqlite import SqliteDatabase
from bridge.types.tenant_dirs import TenantDirs
from tests.storage.traced import traced

Traced = tuple[SqliteDatabase, list[str], Indexer, TenantDirs]


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


@pytest.fixture
async def traced_index(tmp_path: Path) -> AsyncIterator[Traced]:
    db, statements = await traced(tmp_path / "roost.db")
    try:
        yield db, statements, Indexer(db), TenantDirs.of(tmp_path, "t")
    finally:
        await db.aclose()


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
