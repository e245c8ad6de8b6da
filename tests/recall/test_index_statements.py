"""What a batch of the index costs SQLite's writer: a few statements, whatever its size.

A recall batch runs on the writer's thread, and each statement it steps lets the
GIL go; a busy event loop may keep it up to its switch interval, and a turn's end
unit queued behind the batch waits for all of it. So a batch's text-index rows
go by a few multi-row statements (not one run per row), and its INSERT's new
ids are worked out, not read back a row at a time. Ids stay what they were: the
tenant's newest + 1, in the batch's order, with known messages left out.
"""

from __future__ import annotations

from bridge.recall.index import Message
from bridge.recall.search import search
from tests.recall.conftest import Traced

TABLES = ("storage_fts_docs", "storage_fts_postings", "storage_fts_df")


def _pair(n: int) -> list[Message]:
    conv = f"web:c{n % 3}"
    return [
        Message(conv, str(n), "user", f"tell me about topic{n} and the weather", 1_000 + n, "web"),
        Message(conv, f"{n}:reply", "assistant", f"topic{n} is sunny", 1_001 + n, "web"),
    ]


async def test_a_batch_writes_its_text_index_by_a_few_statements(traced_index: Traced) -> None:
    _, statements, indexer, dirs = traced_index
    await indexer.admit(dirs, _pair(0))  # the tenant's conversation and speakers known
    for size in (5, 11, 15):  # 10-30 messages: 30-90 postings, each count a remainder
        statements.clear()
        batch = [m for n in range(100 * size, 100 * size + size) for m in _pair(n)]
        assert (await indexer.admit(dirs, batch)).added == 2 * size
        for table in TABLES:  # one statement per power of two of the rows at most
            runs = [s for s in statements if s.startswith(f"INSERT INTO {table} ")]
            assert 1 <= len(runs) <= 6, (table, size, len(runs))
        index = await indexer.index(dirs)
        hits = await search(index, f"topic{100 * size + 3}", 5)
        assert {h.row.msg_id for h in hits} == {f"{100 * size + 3}", f"{100 * size + 3}:reply"}


async def test_a_fresh_batch_reads_no_row_back_and_its_ids_follow_the_newest(
    traced_index: Traced,
) -> None:
    db, statements, indexer, dirs = traced_index
    await indexer.admit(dirs, _pair(0))
    statements.clear()
    batch = [m for n in range(1, 9) for m in _pair(n)]
    assert (await indexer.admit(dirs, batch)).added == 16
    assert not any("RETURNING id, conv, msg_id" in s for s in statements)
    assert not any(s.startswith("SELECT id, conv, msg_id") for s in statements)
    rows = await db.fetch_all(
        "SELECT id, msg_id FROM recall_messages WHERE tenant = 't' ORDER BY id"
    )
    assert [r[1] for r in rows] == [m.msg_id for m in _pair(0) + batch]
    assert [r[0] for r in rows] == list(range(1, 19))


async def test_a_batch_with_known_messages_numbers_only_the_new_ones_in_order(
    traced_index: Traced,
) -> None:
    db, _, indexer, dirs = traced_index
    first = [m for n in range(4) for m in _pair(n)]
    await indexer.admit(dirs, first)
    mixed = [m for n in (2, 4, 1, 5, 6) for m in _pair(n)]  # 2 and 1 known already
    got = await indexer.admit(dirs, mixed)
    assert (got.added, got.known) == (6, 4)
    rows = await db.fetch_all(
        "SELECT id, msg_id FROM recall_messages WHERE tenant = 't' AND id > 8 ORDER BY id"
    )
    assert rows == [
        (9, "4"),
        (10, "4:reply"),
        (11, "5"),
        (12, "5:reply"),
        (13, "6"),
        (14, "6:reply"),
    ]
    index = await indexer.index(dirs)
    for n in (1, 4, 6):  # each found once, with its own text
        hits = await search(index, f"topic{n}", 5)
        assert sorted(h.row.msg_id for h in hits) == [str(n), f"{n}:reply"]


async def test_a_fresh_batch_is_one_plain_insert_and_a_known_message_numbers_it_again(
    traced_index: Traced,
) -> None:
    """A live turn's batch (no message known) is numbered from the newest id by a plain
    multi-row INSERT: no window function, no look-up per row. One with a known message
    leaves gaps there: its rows go again and the numbering INSERT closes them."""
    db, statements, indexer, dirs = traced_index
    await indexer.admit(dirs, _pair(0))
    statements.clear()
    assert (await indexer.admit(dirs, [m for n in (1, 2, 3) for m in _pair(n)])).added == 6
    inserts = [s for s in statements if s.startswith("INSERT OR IGNORE INTO recall_messages")]
    assert len(inserts) == 1 and "row_number()" not in inserts[0]
    assert not any(s.startswith("DELETE FROM recall_messages") for s in statements)
    statements.clear()
    got = await indexer.admit(dirs, [m for n in (4, 2, 5) for m in _pair(n)])  # 2 known
    assert (got.added, got.known) == (4, 2)
    assert any("row_number()" in s for s in statements)
    rows = await db.fetch_all("SELECT id, msg_id FROM recall_messages WHERE tenant = 't'")
    assert sorted(r[0] for r in rows) == list(range(1, 13))
