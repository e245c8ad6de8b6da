"""The index per tenant: isolation, idempotence, neighbours, retention, screening and masking."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import quote

from bridge.loadout.mask import Masker
from bridge.recall.index import Message
from bridge.recall.indexer import GROUP, MAX_TEXT, Indexer
from bridge.recall.search import search
from bridge.recall.service import Recall
from bridge.screening.screen import secret_kinds
from bridge.storage.protocol import Database
from bridge.types.tenant_dirs import TenantDirs

SECRET = "hunter2-correct-horse-battery"


def _raw(folder: Path) -> bytes:
    """roost.db and its WAL as bytes (where the index lives now)."""
    return b"".join(p.read_bytes() for p in sorted(folder.glob("roost.db*")))


def msg(conv: str, mid: str, text: str, at: int = 1_000, role: str = "user") -> Message:
    return Message(conv, mid, role, text, at, "web")


async def test_two_tenants_with_colliding_ids_never_see_each_other(
    tmp_path: Path, db: Database
) -> None:
    indexer = Indexer(db)
    alice, bob = TenantDirs.of(tmp_path, "alice"), TenantDirs.of(tmp_path, "bob")
    await indexer.admit(alice, [msg("web:c1", "1", "my sister lives in Porto")])
    await indexer.admit(bob, [msg("web:c1", "1", "my brother lives in Oslo")])
    recall = Recall(indexer)
    assert [
        h.row.text for h in (await recall.find(alice, "where does my sibling live Oslo Porto")).hits
    ] == ["my sister lives in Porto"]
    assert [h.row.text for h in (await recall.find(bob, "Porto Oslo")).hits] == [
        "my brother lives in Oslo"
    ]
    assert (await recall.find(bob, "sister")).hits == []


async def test_adding_again_adds_nothing(tmp_path: Path, db: Database) -> None:
    indexer = Indexer(db)
    dirs = TenantDirs.of(tmp_path, "t")
    batch = [msg("a", "1", "tea in Kyoto"), msg("a", "2", "coffee in Rome"), msg("b", "1", "tea")]
    assert (await indexer.admit(dirs, batch)).added == 3
    again = await indexer.admit(dirs, batch)
    assert (again.added, again.known) == (0, 3)
    assert await (await indexer.index(dirs)).count() == 3


async def test_neighbours_stay_in_their_conversation(tmp_path: Path, db: Database) -> None:
    indexer = Indexer(db)
    dirs = TenantDirs.of(tmp_path, "t")
    await indexer.admit(
        dirs,
        [
            msg("a", "1", "what should I plant in spring", 1),
            msg("b", "1", "unrelated other chat", 2),
            msg("a", "2", "tomatoes and basil", 3, "assistant"),
            msg("a", "3", "thanks, the basil grew well", 4),
        ],
    )
    index = await indexer.index(dirs)
    hit = (await search(index, "tomatoes", 1))[0]
    before, after = await index.neighbours(hit.row, 1, 1)
    assert [r.msg_id for r in before] == ["1"] and before[0].conversation == "a"
    assert [r.msg_id for r in after] == ["3"]
    text = await Recall(indexer).render(dirs, [hit])
    assert "what should I plant in spring" in text and "unrelated" not in text
    assert "1970-01-01 00:00 UTC" in text


async def test_retention_removes_old_messages_and_their_terms(tmp_path: Path, db: Database) -> None:
    indexer = Indexer(db)
    dirs = TenantDirs.of(tmp_path, "t")
    await indexer.admit(
        dirs, [msg("a", "1", "old violin lesson", 1_000), msg("a", "2", "new violin", 9_000)]
    )
    index = await indexer.index(dirs)
    assert await index.delete_before(5_000) == 1
    assert [h.row.msg_id for h in await search(index, "violin lesson", 5)] == ["2"]
    assert await index.doc_freq(["lesson", "violin"], 10) == {"lesson": 0, "violin": 1}


async def test_credentials_are_refused_and_vault_values_masked_in_every_spelling(
    tmp_path: Path, db: Database
) -> None:
    masker = Masker({"wifi": SECRET})
    indexer = Indexer(db, lambda dirs, text: masker.mask(text), screen=secret_kinds)
    dirs = TenantDirs.of(tmp_path, "t")
    b64 = base64.b64encode(SECRET.encode()).decode()
    got = await indexer.admit(
        dirs,
        [
            msg("a", "1", "my OpenAI key is sk-proj-" + "A1b2C3d4" * 6),
            msg("a", "2", f"the wifi is {SECRET} at home"),
            msg("a", "3", f"encoded {b64} and {quote(SECRET)} too"),
            msg("a", "4", "nothing secret about gardening"),
        ],
    )
    assert (got.added, got.refused) == (3, 1)
    stored = {r.msg_id: r.text async for r in (await indexer.index(dirs)).iter_all()}
    assert "1" not in stored
    assert SECRET not in stored["2"] and "[vault:wifi]" in stored["2"]
    assert b64 not in stored["3"] and quote(SECRET) not in stored["3"]
    raw = _raw(tmp_path)
    assert SECRET.encode() not in raw and b"sk-proj-" not in raw


async def test_a_vault_value_across_the_length_cut_is_not_stored_in_part(
    tmp_path: Path, db: Database
) -> None:
    """atk39 F6: a message longer than MAX_TEXT was cut, then masked: the start of a value
    across the cut was stored, and `recall_search` could show it to the model."""
    masker = Masker({"API": "Rt5pLm8Qz2Wx7Nv4Kb9J"})
    indexer = Indexer(db, lambda dirs, text: masker.mask(text))
    dirs = TenantDirs.of(tmp_path, "t")
    long = "word " * ((MAX_TEXT - 12) // 5) + "a" * ((MAX_TEXT - 12) % 5)
    got = await indexer.admit(dirs, [msg("a", "1", long + "Rt5pLm8Qz2Wx7Nv4Kb9J rest")])
    assert got.added == 1
    (stored,) = [r.text async for r in (await indexer.index(dirs)).iter_all()]
    assert len(stored) == MAX_TEXT and "Rt5pLm8Q" not in stored
    assert stored.endswith("aaa[vault:API] ")
    assert "Rt5p" not in indexer.clean(dirs, long + "Rt5pLm8Qz2Wx7Nv4Kb9J")  # the import's way


async def test_a_group_with_one_credential_keeps_the_rest(tmp_path: Path, db: Database) -> None:
    indexer = Indexer(db, screen=secret_kinds)
    dirs = TenantDirs.of(tmp_path, "t")
    batch = [msg("a", str(i), f"plain note number {i}") for i in range(GROUP * 2)]
    batch[5] = msg(
        "a", "5", "export AWS_SECRET_ACCESS_KEY=Hq7vR2mXk9LpZ4tWc8NbY3sJd6FgA1eUo5iQrT0y"
    )
    got = await indexer.admit(dirs, batch)
    assert (got.added, got.refused) == (GROUP * 2 - 1, 1)


async def test_german_words_find_their_inflections(tmp_path: Path, db: Database) -> None:
    indexer = Indexer(db)
    dirs = TenantDirs.of(tmp_path, "t")
    await indexer.admit(
        dirs,
        [
            msg("a", "1", "Wir haben die Häuser am See besichtigt, die Gärten waren schön."),
            msg("a", "2", "I was running along the rivers every morning."),
        ],
    )
    index = await indexer.index(dirs)
    assert [h.row.msg_id for h in await search(index, "Haus mit Garten", 5)] == ["1"]
    assert [h.row.msg_id for h in await search(index, "hauser", 5)] == ["1"]  # diacritics folded
    assert [h.row.msg_id for h in await search(index, "river run", 5)] == ["2"]
