"""The index as live turns fill it: one exchange after another in the same chats.

A turn's exchange is findable by the next turn; a chat keeps one conversation
however many turns it has; a text the turn masked already is still screened
(a credential in it is refused) and a plain one still masked; a speaker a
retention prune removed is known again when they speak again; a failed write
leaves nothing behind that the next write would point at. `record_exchange`
only queues: the indexer's task writes the exchange after the reply, in order
(`settled` waits for it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.loadout.mask import Masker
from bridge.recall.index import Message
from bridge.recall.indexer import Indexer
from bridge.recall.search import search
from bridge.screening.screen import secret_kinds
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database
from bridge.types.tenant_dirs import TenantDirs

SECRET = "hunter2-correct-horse-battery"
API_KEY = "sk-proj-" + "A1b2C3d4" * 6


async def test_each_turn_is_found_right_after_it_and_a_chat_stays_one_conversation(
    tmp_path: Path, db: Database
) -> None:
    indexer = Indexer(db, screen=secret_kinds)
    dirs = TenantDirs.of(tmp_path, "t")
    vault = Masker({})
    topics = ["violin", "fjord", "basil", "kayak", "quince", "tram"]
    for n, topic in enumerate(topics):
        chat = f"c{n % 2}"
        asked, answer = vault.mask(f"tell me about the {topic}"), vault.mask(f"the {topic} is fine")
        indexer.record_exchange(dirs, "web", chat, str(n), asked, answer, 1_000.0 + n, "Ann")
        await indexer.settled()  # written after the reply, in order
        hits = await search(await indexer.index(dirs), topic, 5)
        assert {h.row.msg_id for h in hits} == {str(n), f"{n}:reply"}
        assert {h.row.conversation for h in hits} == {f"web:{chat}"}
    convs = "SELECT name FROM recall_conversations WHERE tenant = 't' ORDER BY name"
    assert await db.fetch_all(convs) == [("web:c0",), ("web:c1",)]
    speakers = await db.fetch_all("SELECT name FROM recall_speakers ORDER BY name")
    assert speakers == [("",), ("Ann",)]  # the answers carry no name


async def test_a_masked_text_is_still_screened_and_a_plain_one_still_masked(
    tmp_path: Path, db: Database
) -> None:
    masker = Masker({"wifi": SECRET})
    indexer = Indexer(db, lambda dirs, text: masker.mask(text), screen=secret_kinds)
    dirs = TenantDirs.of(tmp_path, "t")
    masked_key = masker.mask(f"my OpenAI key is {API_KEY}")  # masked, but not a vault value
    got = await indexer.admit(
        dirs,
        [
            Message("web:c", "1", "user", masked_key, 1, "web"),
            Message("web:c", "2", "user", f"plain text with {SECRET}", 2, "web"),
            Message("web:c", "3", "user", masker.mask(f"masked {SECRET}"), 3, "web"),
        ],
    )
    assert (got.added, got.refused) == (2, 1)
    stored = {r.msg_id: r.text async for r in (await indexer.index(dirs)).iter_all()}
    assert stored == {"2": "plain text with [vault:wifi]", "3": "masked [vault:wifi]"}


async def test_a_speaker_pruned_away_is_known_again_when_they_speak_again(
    tmp_path: Path, db: Database
) -> None:
    indexer = Indexer(db)
    dirs = TenantDirs.of(tmp_path, "t")
    await indexer.admit(dirs, [Message("web:c", "1", "user", "old violin", 1_000, "web", "Zelda")])
    index = await indexer.index(dirs)
    assert "zelda" in await index.speaker_terms()
    assert await index.delete_before(5_000) == 1
    assert "zelda" not in await index.speaker_terms()
    await indexer.admit(dirs, [Message("web:c", "2", "user", "new violin", 9_000, "web", "Zelda")])
    assert "zelda" in await index.speaker_terms()


async def test_a_failed_write_leaves_no_conversation_the_next_write_points_at(
    tmp_path: Path, db: Database
) -> None:
    indexer = Indexer(db)
    dirs = TenantDirs.of(tmp_path, "t")
    bad = Message("web:new", "2", object(), "x", 2, "web")  # type: ignore[arg-type]
    good = Message("web:new", "1", "user", "first note on quinces", 1, "web")
    with pytest.raises(StorageError):
        await indexer.admit(dirs, [good, bad])  # one INSERT: neither message is stored
    await indexer.admit(dirs, [good])
    rows = [r async for r in (await indexer.index(dirs)).iter_all()]  # joined: none lost
    assert [(r.conversation, r.text) for r in rows] == [("web:new", "first note on quinces")]
    assert [h.row.msg_id for h in await search(await indexer.index(dirs), "quinces", 5)] == ["1"]


async def test_exchanges_queued_together_are_one_write_per_tenant_in_order(
    tmp_path: Path, db: Database
) -> None:
    """The indexer's task lets queued exchanges gather and writes each tenant's as one
    `admit`, in the order they were answered; `settled` does not wait out the linger."""
    indexer = Indexer(db)
    calls: list[tuple[str, list[str]]] = []
    admit = indexer.admit

    async def spied(dirs: TenantDirs, messages: list[Message]) -> object:
        calls.append((dirs.tenant, [m.msg_id for m in messages]))
        return await admit(dirs, messages)

    indexer.admit = spied  # type: ignore[method-assign,assignment]
    a, b = TenantDirs.of(tmp_path, "a"), TenantDirs.of(tmp_path, "b")
    for n, dirs in enumerate([a, b, a, a, b]):
        indexer.record_exchange(dirs, "web", "c", str(n), f"ask {n}", f"say {n}", 1_000.0 + n)
    await indexer.settled()
    assert calls == [
        ("a", ["0", "0:reply", "2", "2:reply", "3", "3:reply"]),
        ("b", ["1", "1:reply", "4", "4:reply"]),
    ]
    ids = "SELECT msg_id FROM recall_messages WHERE tenant = 'a' ORDER BY id"
    assert [r[0] for r in await db.fetch_all(ids)] == [
        "0",
        "0:reply",
        "2",
        "2:reply",
        "3",
        "3:reply",
    ]
    await indexer.aclose()


async def test_queued_exchanges_are_written_in_short_transactions_all_of_them_in_order(
    tmp_path: Path, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many exchanges queued at once (turns arriving together) are written a screening
    group at a time, each group one transaction of the index, so a turn's end queued
    behind one on SQLite's writer waits for a short write; none is lost or reordered."""
    from bridge.recall.index import RecallIndex
    from bridge.recall.indexer import GROUP

    sizes: list[int] = []
    real_add = RecallIndex.add

    async def add(self: RecallIndex, messages: object) -> int:
        batch = list(messages)  # type: ignore[call-overload]
        sizes.append(len(batch))
        return await real_add(self, batch)

    monkeypatch.setattr(RecallIndex, "add", add)
    indexer = Indexer(db, screen=secret_kinds)
    dirs = TenantDirs.of(tmp_path, "t")
    vault = Masker({})
    for n in range(45):
        asked, answer = vault.mask(f"question {n} about kayaks"), vault.mask(f"answer {n}")
        indexer.record_exchange(dirs, "web", "c", str(n), asked, answer, 1_000.0 + n, "Ann")
    await indexer.settled()
    assert sum(sizes) == 90 and len(sizes) >= 3 and max(sizes) <= GROUP, sizes
    stored = [r.msg_id async for r in (await indexer.index(dirs)).iter_all()]
    assert stored == [m for n in range(45) for m in (str(n), f"{n}:reply")]
