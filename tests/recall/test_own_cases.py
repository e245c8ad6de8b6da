"""roost's own LongMemEval-style cases (bench/longmem): well formed, sourced, and reported
by `roost recall-eval` apart from the LoCoMo-style set."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.recall.evaluate import OWN_DIR, load_set
from tests.fakes.fake_openai import FakeOpenAI
from tests.recall.test_answer_eval import dev_set
from tests.spine.test_daemon import env_for, run


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


def test_the_own_cases_are_well_formed_and_say_their_source() -> None:
    assert "public domain" in (OWN_DIR / "SOURCE.md").read_text()
    [(_name, messages, questions)] = load_set(OWN_DIR)
    ids = {m.msg_id for m in messages}
    assert {int(str(q["category"])) for q in questions} == {5, 6}
    for q in questions:
        assert set(q["evidence"]) <= ids, q  # type: ignore[call-overload]
    times = [m.at_ms for m in messages]
    assert times == sorted(times)  # sessions in order: "the newest statement" is well defined


async def test_recall_eval_reports_the_own_cases_separately(
    home: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    folder = dev_set(tmp_path / "dev")
    code, out, err = await run(["recall-eval", "--dir", str(folder), "--own", str(OWN_DIR)], env)
    assert code == 0, err
    first, _, own = out.partition("== own cases (longmem")
    assert "single-hop" in first and "knowledge-upd" not in first
    assert "knowledge-upd" in own and "temporal-own" in own and "single-hop" not in own
    n = sum(1 for line in (OWN_DIR / "questions-1.jsonl").read_text().splitlines() if line)
    assert f"all             {n:>4}" in own
    assert json.loads((OWN_DIR / "questions-1.jsonl").read_text().splitlines()[0])["q"]
