"""Dense hybrid recall: the embeddings client against a fake server, vectors, RRF, the backfill.

The fake server's vectors see `synonyms` (its "meaning"), so a question worded
unlike its answer is found by the vectors and not by the words alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.core.config_sections import DefaultLLMSettings
from bridge.llm.embeddings import EmbeddingsClient, embeddings_client, parse_embeddings
from bridge.recall.backfill import Backfill
from bridge.recall.embedder import EmbedError, pack
from bridge.recall.hybrid import fuse
from bridge.recall.index import Message, RecallIndex
from bridge.recall.indexer import Indexer
from bridge.recall.search import DEFAULT, Hit, Tuning, search
from bridge.recall.service import Recall
from bridge.recall.vectors import Dense, count, model_of, pending, store, use_model
from bridge.recall.wiring import build_recall
from bridge.storage.protocol import Database
from bridge.types.tenant_dirs import TenantDirs
from tests.fakes.fake_embeddings import FakeEmbeddings, fake_vector

SYNONYMS = {"sibling": "sister", "reside": "lives", "dwell": "lives"}
TEXTS = [
    "my sister lives in Porto",
    "we had grilled sardines at the harbour",
    "the violin lesson moved to Thursday",
]


class Verbatim:
    def mask(self, text: str) -> str:
        return text


def screen_nothing(text: str) -> list[str]:
    return []


def msg(mid: str, text: str, at: int = 1_000) -> Message:
    return Message("web:c1", mid, "user", text, at, "web")


@pytest.fixture
async def server() -> AsyncIterator[FakeEmbeddings]:
    fake = FakeEmbeddings(synonyms=SYNONYMS)
    await fake.start()
    yield fake
    await fake.stop()


async def no_sleep(_: float) -> None:
    return None


def client(fake: FakeEmbeddings, **kw: object) -> EmbeddingsClient:
    return EmbeddingsClient(fake.base_url, fake.key, "fake-embed", sleep=no_sleep, **kw)  # type: ignore[arg-type]


def test_fuse_ranks_a_message_high_in_both_lists_first() -> None:
    fused = fuse((([1, 2, 3], 1.0), ([3, 4], 1.0)), k=60)
    assert max(fused, key=fused.__getitem__) == 3
    assert fused[1] == pytest.approx(1 / 61) and fused[4] == pytest.approx(1 / 62)
    assert set(fused) == {1, 2, 3, 4}


async def test_client_puts_vectors_back_in_input_order(server: FakeEmbeddings) -> None:
    embed = client(server, dimensions=32)
    try:
        got = await embed.embed(["a b", "c", "a b c"])
    finally:
        await embed.aclose()
    assert got == [fake_vector(t, 32, SYNONYMS) for t in ("a b", "c", "a b c")]
    assert server.requests[-1]["dimensions"] == 32
    assert server.requests[-1]["encoding_format"] == "float"
    assert embed.name == "fake-embed@32"


async def test_client_retries_server_errors_then_names_the_status(server: FakeEmbeddings) -> None:
    embed = client(server, max_retries=2)
    try:
        server.script(503, 429)
        assert len(await embed.embed(["x"])) == 1
        server.script(500, 500, 500)
        with pytest.raises(EmbedError, match="HTTP 500"):
            await embed.embed(["x"])
        server.key = "another"
        with pytest.raises(EmbedError, match="HTTP 401"):
            await embed.embed(["secret words stay out"])
    finally:
        await embed.aclose()


def test_a_malformed_answer_is_an_error_without_the_text() -> None:
    with pytest.raises(EmbedError, match="one vector per text"):
        parse_embeddings({"data": []}, 1)
    with pytest.raises(EmbedError, match="different sizes"):
        parse_embeddings({"data": [{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}]}, 2)
    with pytest.raises(EmbedError, match="out of place"):
        parse_embeddings({"data": [{"index": 0, "embedding": [1]}] * 2}, 2)


def test_embeddings_default_to_the_openai_server_of_llm() -> None:
    off = DefaultLLMSettings.model_validate({"api_key": "sk-x"})
    assert embeddings_client(off) is None
    on = DefaultLLMSettings.model_validate(
        {"api_key": "sk-x", "base_url": "http://127.0.0.1:9/v1", "embeddings": {"enabled": True}}
    )
    made = embeddings_client(on)
    assert made is not None and made.base_url == "http://127.0.0.1:9/v1"
    anthropic = DefaultLLMSettings.model_validate(
        {"provider": "anthropic", "api_key": "sk-ant-x", "embeddings": {"enabled": True}}
    )
    assert embeddings_client(anthropic) is None


async def test_vectors_of_a_new_model_start_afresh_and_skip_deleted_messages(
    db: Database,
) -> None:
    index = RecallIndex(db, "t")
    await index.add([msg(str(n), t) for n, t in enumerate(TEXTS)])
    assert await use_model(db, "t", "m1") is True
    rows = await pending(db, "t", 0, 10)
    assert [t for _, t in rows] == TEXTS
    await store(db, "t", [(rid, pack([1.0, 0.0])) for rid, _ in rows] + [(999, pack([1.0]))])
    assert await count(db, "t") == 3 and await pending(db, "t", 0, 10) == []
    assert await use_model(db, "t", "m1") is False and await count(db, "t") == 3
    assert await use_model(db, "t", "m2") is True and await count(db, "t") == 0
    assert await use_model(db, "u", "m1") is True  # per tenant: another's vectors stay
    assert await model_of(db, "t") == "m2"


async def test_dense_scores_the_newest_scan_rows_by_cosine(db: Database) -> None:
    index = RecallIndex(db, "t")
    await index.add([msg(str(n), t) for n, t in enumerate(TEXTS)])
    await use_model(db, "t", "m")
    ids = [rid for rid, _ in await pending(db, "t", 0, 10)]
    await store(
        db, "t", list(zip(ids, [pack([1, 0]), pack([0.6, 0.8]), pack([0, 1])], strict=True))
    )
    dense = Dense()
    await dense.refresh(db, "t")
    near = dense.nearest([3.0, 4.0], 2)
    assert sorted(near, key=near.__getitem__, reverse=True) == [ids[1], ids[2]]
    assert near[ids[1]] == pytest.approx(1.0, abs=1e-6)
    dense.scan = 1  # only the newest vector is scored
    assert list(dense.nearest([1.0, 0.0], 5)) == [ids[2]]


async def test_hybrid_finds_an_answer_worded_unlike_the_question(
    server: FakeEmbeddings, tmp_path: Path, db: Database
) -> None:
    indexer, embed = Indexer(db), client(server)
    dirs = TenantDirs.of(tmp_path, "t")
    await indexer.admit(dirs, [msg(str(n), t, 1_000 + n) for n, t in enumerate(TEXTS)])
    backfill = Backfill(embed, indexer, batch=2)
    try:
        assert await backfill.fill(dirs) == 3
        assert len(server.requests) == 2  # two batches
        question = "where does my sibling reside"
        assert (await Recall(indexer).find(dirs, question)).hits == []  # the words alone miss
        hits = (await Recall(indexer, embedder=embed).find(dirs, question, 1)).hits
        assert [h.row.text for h in hits] == [TEXTS[0]]
        server.script(400)  # a failing model: the words alone answer
        hits = (await Recall(indexer, embedder=embed).find(dirs, "violin Thursday", 1)).hits
        assert [h.row.text for h in hits] == [TEXTS[2]]
    finally:
        await backfill.aclose()
        await embed.aclose()
        await indexer.aclose()


async def test_every_insert_wakes_the_background_backfill(
    server: FakeEmbeddings, tmp_path: Path, db: Database
) -> None:
    embed = client(server)
    wired = build_recall(db, True, lambda _: Verbatim(), None, screen_nothing, 0, embed, 8)
    assert wired.backfill is not None and wired.recall.embedder is embed
    dirs = TenantDirs.of(tmp_path, "t")
    try:
        server.hold.clear()  # the model answers only once the insert is back
        got = await wired.indexer.admit(dirs, [msg(str(n), t) for n, t in enumerate(TEXTS)])
        assert got.added == 3
        assert await count(db, "t") == 0
        server.hold.set()
        for _ in range(3000):  # readiness: the vectors are stored (bound only stops a hang)
            if await count(db, "t") == 3:
                break
            await asyncio.sleep(0.01)
        assert await count(db, "t") == 3
    finally:
        await wired.backfill.aclose()
        await embed.aclose()
        await wired.indexer.aclose()


async def test_a_slow_search_stalls_no_other_chat(tmp_path: Path, db: Database) -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(index: RecallIndex, query: str, k: int, tuning: Tuning = DEFAULT) -> list[Hit]:
        if query == "slow":
            entered.set()
            await release.wait()
        return await search(index, query, k, tuning)

    indexer = Indexer(db)
    alice, bob = TenantDirs.of(tmp_path, "alice"), TenantDirs.of(tmp_path, "bob")
    await indexer.admit(alice, [msg("1", "slow tea")])
    await indexer.admit(bob, [msg("1", "quick coffee")])
    recall = Recall(indexer, searcher=slow)
    try:
        stuck = asyncio.create_task(recall.find(alice, "slow"))
        await asyncio.wait_for(entered.wait(), 60)  # bound only stops a hang
        found = await recall.find(bob, "coffee")  # answered while alice's search is stuck
        assert [h.row.text for h in found.hits] == ["quick coffee"] and not stuck.done()
        await indexer.admit(alice, [msg("2", "written meanwhile")])  # the loop still writes
        release.set()
        assert [h.row.text for h in (await stuck).hits] == ["slow tea"]
    finally:
        release.set()
        await indexer.aclose()
