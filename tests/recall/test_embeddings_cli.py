"""`roost import` computes vectors after its summary; `roost recall` searches with them;
`roost serve` computes at start what an import could not.

Each command is its own `python -m bridge.cli.main` process; the embeddings
server is the fake (`tests/fakes/fake_embeddings.py`), whose vectors read
"sibling" as "sister", so only the vectors find the answer below.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.fake_embeddings import FakeEmbeddings
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, run, start_daemon


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


@pytest.fixture
async def embeddings() -> AsyncIterator[FakeEmbeddings]:
    server = FakeEmbeddings(synonyms={"sibling": "sister", "reside": "lives"})
    await server.start()
    yield server
    await server.stop()


def history(path: Path) -> Path:
    rows = [
        ("1", "user", "my sister lives in Porto"),
        ("2", "assistant", "Porto has lovely tiles."),
        ("3", "user", "the violin lesson moved to Thursday"),
    ]
    lines = [
        json.dumps({"conversation": "c", "id": i, "role": r, "text": t, "time": 1_700_000_000})
        for i, r, t in rows
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


async def test_import_embeds_and_recall_fuses_the_vectors(
    home: Path, tmp_path: Path, fake: FakeOpenAI, embeddings: FakeEmbeddings
) -> None:
    env = env_for(home, fake) | {
        "ROOST_LLM__EMBEDDINGS__ENABLED": "true",
        "ROOST_LLM__EMBEDDINGS__BASE_URL": embeddings.base_url,
        "ROOST_LLM__EMBEDDINGS__API_KEY": "sk-embed",
        "ROOST_LLM__EMBEDDINGS__MODEL": "fake-embed",
    }
    file = history(tmp_path / "history.jsonl")
    code, out, err = await run(["import", "--tenant", "alice", str(file)], env)
    assert code == 0, err
    assert "vectors: 3 messages embedded (fake-embed)" in out

    queries = tmp_path / "queries.txt"
    queries.write_text("where does my sibling reside\nviolin Thursday\n")
    code, out, err = await run(
        ["recall", "--tenant", "alice", "--json", "--k", "1", "--batch", str(queries)], env
    )
    assert code == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    assert [g["hits"][0]["id"] for g in got] == ["1", "3"]
    assert [r["model"] for r in embeddings.requests] == ["fake-embed"] * 3  # 1 batch, 2 queries


async def test_import_without_a_reachable_model_leaves_vectors_to_the_daemon(
    home: Path, tmp_path: Path, fake: FakeOpenAI, embeddings: FakeEmbeddings
) -> None:
    embeddings.script(401)
    env = env_for(home, fake) | {
        "ROOST_LLM__EMBEDDINGS__ENABLED": "true",
        "ROOST_LLM__EMBEDDINGS__BASE_URL": embeddings.base_url,
        "ROOST_LLM__EMBEDDINGS__API_KEY": "sk-embed",
    }
    code, out, err = await run(["import", "--tenant", "alice", str(history(tmp_path / "h"))], env)
    assert code == 0, err
    assert "3 added" in out and "vectors not computed now (" in out
    assert "HTTP 401" in out and "Porto" not in out.split("vectors not computed")[1]

    index = home / "roost.db"
    daemon = await start_daemon(env)  # the daemon embeds what the import left undone
    try:
        for _ in range(6000):  # readiness: all three vectors stored (the bound stops a hang)
            if vectors(index) == 3:
                break
            await asyncio.sleep(0.01)
        assert vectors(index) == 3
    finally:
        code, err = await daemon.stop()
    assert code == 0, err


def vectors(index: Path) -> int:
    conn = sqlite3.connect(index)
    try:
        query = "SELECT count(*) FROM recall_vectors WHERE tenant = 'alice'"
        return int(conn.execute(query).fetchone()[0])
    finally:
        conn.close()
