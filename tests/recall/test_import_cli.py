"""`roost import` then `/recall` through the full pipeline (`roost send`); `roost recall --json`.

Each command is its own `python -m bridge.cli.main` process over one home, as an
operator would run them; the turn's model is the fake OpenAI server.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.recall.exports import chatgpt_conversation, claude_conversation
from tests.spine.test_daemon import env_for, run


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


def jsonl(path: Path) -> Path:
    rows = [
        {
            "conversation": "trip",
            "id": "1",
            "role": "user",
            "text": "We stayed at the Hotel Albatross in Split.",
            "time": "2023-08-02T09:00:00",
        },
        {
            "conversation": "trip",
            "id": "2",
            "role": "assistant",
            "text": "Split is beautiful in August.",
            "time": "2023-08-02T09:00:05",
        },
    ]
    lines = [json.dumps(r) for r in rows]
    lines.insert(1, '{"conversation": "trip", "id": 3')
    path.write_text("\n".join(lines) + "\n")
    return path


async def test_import_then_recall_in_chat_and_on_the_command_line(
    home: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    file = jsonl(tmp_path / "history.jsonl")
    code, out, err = await run(["import", "--tenant", "alice", str(file)], env)
    assert code == 0, err
    assert "1 conversations, 2 messages read: 2 added" in out
    assert "line 2:" in out

    code, out, _ = await run(["send", "--tenant", "alice", "/recall which hotel in Split"], env)
    assert code == 0
    assert "Hotel Albatross" in out and "2023-08-02 09:00 UTC" in out
    assert "Split is beautiful in August." in out  # the turn after the hit

    queries = tmp_path / "queries.txt"
    queries.write_text("hotel Albatross\n\nAugust weather\n")
    code, out, _ = await run(
        ["recall", "--tenant", "alice", "--json", "--k", "1", "--batch", str(queries)], env
    )
    assert code == 0
    got = [json.loads(line) for line in out.splitlines()]
    assert [g["query"] for g in got] == ["hotel Albatross", "August weather"]
    hit = got[0]["hits"][0]
    assert set(hit) == {"id", "conversation", "time", "role", "text", "score"}
    assert (hit["id"], hit["conversation"], hit["role"]) == ("1", "trip", "user")
    assert got[1]["hits"][0]["id"] == "2"

    chain = (home / "audit" / "chain.jsonl").read_text()
    assert '"history.imported"' in chain and '"recall.searched"' in chain
    assert "Albatross" not in chain and "hotel" not in chain


async def test_import_chatgpt_and_claude_exports(
    home: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    gpt = tmp_path / "conversations.json"
    gpt.write_text(json.dumps([chatgpt_conversation("g1", "sourdough")]))
    code, out, err = await run(
        ["import", "--tenant", "alice", "--format", "chatgpt", str(gpt)], env
    )
    assert code == 0, err
    assert "1 conversations, 3 messages read: 3 added" in out
    claude = tmp_path / "claude.json"
    claude.write_text(json.dumps([claude_conversation("k1", "kombucha")]))
    code, out, _ = await run(
        ["import", "--tenant", "alice", "--format", "claude", str(claude)], env
    )
    assert "2 messages read: 2 added" in out
    code, out, _ = await run(["recall", "--tenant", "alice", "--json", "sourdough kombucha"], env)
    convs = {h["conversation"] for h in json.loads(out)["hits"]}
    assert convs == {"chatgpt:g1", "claude:k1"}


def configure_alice(config: Path) -> None:
    config.write_text('[tenants.alice]\nweb_token = "alice-page-token-0123456"\n')


async def test_the_command_line_masks_a_value_put_in_the_vault_after_it_was_said(
    home: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    """`roost recall` printed a message in clear that held a value the operator put in the
    vault later; /recall, the prompt and the export masked it (an attacker's pass)."""
    value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
    env = env_for(home, fake)
    configure_alice(Path(env["ROOST_CONFIG"]))  # `roost vault set` takes a configured tenant
    said = {"conversation": "house", "id": "1", "role": "user", "time": "2024-05-01T08:00:00"}
    file = tmp_path / "said.jsonl"
    file.write_text(json.dumps({**said, "text": f"the door code is {value} at the back"}) + "\n")
    assert (await run(["import", "--tenant", "alice", str(file)], env))[0] == 0
    code, out, _ = await run(["recall", "--tenant", "alice", "door code"], env)
    assert code == 0 and value in out  # not a secret yet: shown as it was said
    assert (await run(["vault", "set", "alice", "door"], env, value.encode()))[0] == 0
    for extra in ([], ["--json"]):
        code, out, _ = await run(["recall", "--tenant", "alice", *extra, "door code"], env)
        assert code == 0 and "the door code is" in out and value not in out, out
