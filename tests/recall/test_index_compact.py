"""The import's cheaper path (the vault's masker looked up once a batch), a message known by
(conversation, id), and index files made before the port moved into the `Database`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bridge.loadout.mask import Masker
from bridge.recall import legacy
from bridge.recall.index import Message, RecallIndex, legacy_path
from bridge.recall.indexer import Indexer
from bridge.recall.search import search
from bridge.recall.service import Recall
from bridge.recall.vectors import Dense, count, model_of
from bridge.recall.wiring import vault_mask
from bridge.storage.protocol import Database
from bridge.types.tenant_dirs import TenantDirs
from tests.recall.legacy_files import old_bm25, old_index


def msgs(n: int, conv: str = "c") -> list[Message]:
    return [
        Message(conv, str(i), "user", f"note {i} about the Porto trip", i, "web") for i in range(n)
    ]


def chat() -> list[Message]:
    return [
        Message("web:a", "1", "user", "we planted tomatoes and basil", 1_000, "web", "Ann"),
        Message("web:b", "1", "user", "the tram to the harbour was late", 2_000, "web", "Ann"),
        Message("web:a", "1:reply", "assistant", "basil likes the sun", 2_001, "web"),
        Message("web:a", "2", "user", "Zelda said the basil grew well", 3_000, "web", "Zelda"),
        Message("web:b", "2", "user", "harbour tram again, late", 4_000, "web", "Ann"),
    ]


async def test_the_vault_masker_is_looked_up_once_a_batch(tmp_path: Path, db: Database) -> None:
    looked: list[TenantDirs] = []
    masker = Masker({"pw": "Porto"})

    def masker_of(dirs: TenantDirs) -> Masker:
        looked.append(dirs)
        return masker

    indexer = Indexer(db, vault_mask(masker_of))
    dirs = TenantDirs.of(tmp_path, "alice")
    got = await indexer.admit(dirs, msgs(100))
    assert got.added == 100 and len(looked) == 1
    rows = [r async for r in (await indexer.index(dirs)).iter_all()]
    assert all("Porto" not in r.text and "[vault:pw]" in r.text for r in rows)
    assert indexer.clean(dirs, "to Porto") == "to [vault:pw]"  # the one-off path still masks


async def test_a_message_is_known_by_conversation_and_id(db: Database) -> None:
    index = RecallIndex(db, "t")
    assert await index.add(msgs(10)) == 10
    assert await index.add(msgs(10)) == 0  # again: nothing
    assert await index.add(msgs(10, conv="other")) == 10  # same ids, another conversation
    assert await index.count() == 20
    ids = [r.rowid async for r in index.iter_all()]
    assert ids == list(range(1, 21))  # numbered per tenant, in the order stored, no gaps


@pytest.mark.parametrize("keyed", [False, True])
async def test_an_index_file_made_before_is_moved_with_its_ids_and_ranking(
    tmp_path: Path, db: Database, keyed: bool
) -> None:
    dirs = TenantDirs.of(tmp_path, "alice")
    path = legacy_path(dirs)
    blobs = {1: b"\x00\x00\x80?" * 2, 4: b"\x00\x00\x00\x00" * 2}
    old_index(path, chat(), keyed=keyed, vectors=blobs, model="m1")
    before = old_bm25(path, ["basil", "harbour"])
    conn = sqlite3.connect(path)
    old_rows = conn.execute("SELECT id, msg_id FROM messages ORDER BY id").fetchall()
    conn.close()
    indexer = Indexer(db)
    index = await indexer.index(dirs)  # the first use moves the file
    assert not [p for p in path.parent.iterdir() if p.name.startswith("index.sqlite")]
    assert [(r.rowid, r.msg_id) async for r in index.iter_all()] == old_rows
    assert [(d, round(s, 9)) for d, s in await index.bm25(["basil", "harbour"], 10)] == [
        (d, round(s, 9)) for d, s in before
    ]
    assert "zelda" in await index.speaker_terms()
    assert await model_of(db, "alice") == "m1" and await count(db, "alice") == 2
    dense = Dense()
    await dense.refresh(db, "alice")
    assert set(dense.nearest([1.0, 1.0], 5)) == {1, 4}
    # new messages go on after the moved ones; a known one is still known
    got = await indexer.admit(dirs, [chat()[0], Message("web:a", "3", "user", "basil", 5, "web")])
    assert (got.added, got.known) == (1, 1)
    assert [r.rowid async for r in index.iter_all()][-1] == 6
    hits = await Recall(indexer).find(dirs, "what did Zelda say about basil")
    assert hits.hits[0].row.msg_id == "2"


async def test_a_move_cut_off_halfway_is_finished_by_the_next_start(
    tmp_path: Path, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirs = TenantDirs.of(tmp_path, "alice")
    path = legacy_path(dirs)
    old_index(path, msgs(1_200))
    real = legacy._move_page
    pages = 0

    async def cut(index: RecallIndex, page: list[tuple[object, ...]], resuming: bool) -> int:
        nonlocal pages
        pages += 1
        if pages == 2:  # the second page's terms are written, then the process dies
            for row in page[:100]:
                await index.text.add(int(str(row[0])), "note porto")
            raise KeyboardInterrupt
        return await real(index, page, resuming)

    monkeypatch.setattr(legacy, "_move_page", cut)
    with pytest.raises(KeyboardInterrupt):
        await Indexer(db).index(dirs)
    assert path.exists()  # kept: the move did not finish
    monkeypatch.setattr(legacy, "_move_page", real)
    index = await Indexer(db).index(dirs)
    assert not path.exists()
    assert await index.count() == 1_200 and await index.text.count() == 1_200
    assert [h.row.msg_id for h in await search(index, "note 777 Porto", 1)] == ["777"]


async def test_terms_a_crash_left_unwritten_are_added_at_the_next_start(
    tmp_path: Path, db: Database
) -> None:
    dirs = TenantDirs.of(tmp_path, "t")
    first = RecallIndex(db, "t")
    await first.add(msgs(30))
    for doc in (29, 30):  # the rows were stored, their terms not (killed between)
        await first.text.remove(doc)
    index = await Indexer(db).index(dirs)  # the next process
    assert await index.text.count() == 30
    assert [h.row.msg_id for h in await search(index, "note 29", 1)] == ["29"]
