"""The import's cheaper path: the vault's masker looked up once a batch, and the smaller
identity index (conversation, id) — with index files made before it still working."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bridge.loadout.mask import Masker
from bridge.recall.index import Message, RecallIndex, index_path
from bridge.recall.indexer import Indexer
from bridge.recall.search import search
from bridge.recall.wiring import vault_mask
from bridge.types.tenant_dirs import TenantDirs

OLD_SCHEMA = """CREATE TABLE messages (
    id INTEGER PRIMARY KEY, key INTEGER NOT NULL UNIQUE, conv INTEGER NOT NULL,
    msg_id TEXT NOT NULL, role TEXT NOT NULL, name TEXT NOT NULL DEFAULT '',
    at_ms INTEGER NOT NULL, source TEXT NOT NULL, text TEXT NOT NULL)"""


def msgs(n: int, conv: str = "c") -> list[Message]:
    return [
        Message(conv, str(i), "user", f"note {i} about the Porto trip", i, "web") for i in range(n)
    ]


def test_the_vault_masker_is_looked_up_once_a_batch(tmp_path: Path) -> None:
    looked: list[TenantDirs] = []
    masker = Masker({"pw": "Porto"})

    def masker_of(dirs: TenantDirs) -> Masker:
        looked.append(dirs)
        return masker

    indexer = Indexer(vault_mask(masker_of))
    dirs = TenantDirs.of(tmp_path, "alice")
    got = indexer.admit(dirs, msgs(100))
    assert got.added == 100 and len(looked) == 1
    rows = list(indexer.index(dirs).iter_all())
    assert all("Porto" not in r.text and "[vault:pw]" in r.text for r in rows)
    assert indexer.clean(dirs, "to Porto") == "to [vault:pw]"  # the one-off path still masks
    indexer.close()


def test_a_new_index_knows_a_message_by_conversation_and_id(tmp_path: Path) -> None:
    index = RecallIndex.open(tmp_path / "i.sqlite")
    columns = {r[1] for r in index.conn.execute("PRAGMA table_info(messages)")}
    assert "key" not in columns
    assert index.add(msgs(10)) == 10
    assert index.add(msgs(10)) == 0  # again: nothing
    assert index.add(msgs(10, conv="other")) == 10  # same ids, another conversation
    assert index.count() == 20
    index.close()


def test_an_index_made_before_keeps_its_key_and_stays_idempotent(tmp_path: Path) -> None:
    dirs = TenantDirs.of(tmp_path, "alice")
    path = index_path(dirs)
    path.parent.mkdir(parents=True)
    old = sqlite3.connect(path)
    old.execute(OLD_SCHEMA)
    old.close()
    indexer = Indexer()
    assert indexer.admit(dirs, msgs(5)).added == 5
    assert indexer.admit(dirs, msgs(5)).known == 5
    index = indexer.index(dirs)
    indexes = [r[1] for r in index.conn.execute("PRAGMA index_list(messages)")]
    assert "messages_ident" not in indexes  # the old file is not grown by a second index
    assert [h.row.msg_id for h in search(index, "note 3 Porto", 1)] == ["3"]
    indexer.close()
