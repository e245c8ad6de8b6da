"""`roost recall-eval --answer` runs each question through the full turn and a model judge.

The configured model is the fake OpenAI server: it answers the first question
(after calling `recall`, which must reach the imported conversation) and the
judge says CORRECT; it misses the second and the judge says WRONG.
"""

from __future__ import annotations

import json
from pathlib import Path

from bridge.app.database import open_database
from bridge.cli.recall_answer import answer_eval
from bridge.core.config import load_settings
from bridge.recall.evaluate import format_report, retrieval_eval
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls

API_KEY = "sk-test-key-000000000000"


def dev_set(folder: Path) -> Path:
    folder.mkdir()
    rows = [
        ("D1:1", "user", "Ana", "We adopted a puppy and named him Biscuit!"),
        ("D1:2", "assistant", "Ben", "Biscuit is such a cute name."),
        ("D1:3", "user", "Ana", "I start my pottery class next Monday."),
    ]
    conv = [
        {
            "conversation": "s1",
            "id": i,
            "role": r,
            "name": n,
            "text": t,
            "time": "2023-05-08T10:00:00",
        }
        for i, r, n, t in rows
    ]
    (folder / "conv-1.jsonl").write_text("\n".join(json.dumps(c) for c in conv) + "\n")
    questions = [
        {"q": "What is the name of Ana's puppy?", "evidence": ["D1:1"], "category": 4},
        {"q": "What class does Ana start?", "evidence": ["D1:3"], "category": 2},
    ]
    (folder / "questions-1.jsonl").write_text("\n".join(json.dumps(q) for q in questions) + "\n")
    return folder


async def test_answer_accuracy_through_the_full_turn(home: Path, tmp_path: Path) -> None:
    folder = dev_set(tmp_path / "set")
    database = await open_database(tmp_path / "eval.db")
    try:
        report = await retrieval_eval(database, folder)
    finally:
        await database.aclose()
    assert report.roost.mean(5) == 1.0 and "single-hop" in format_report(report)
    async with FakeOpenAI(api_key=API_KEY, models=["m1"]) as model:
        settings = load_settings(
            home=home,
            llm={
                "provider": "openai",
                "base_url": model.base_url,
                "api_key": API_KEY,
                "model": "m1",
            },
        )
        model.script(
            ToolCalls([Call("recall", {"query": "puppy name"})]),
            Text("Biscuit."),
            Text("CORRECT"),
            Text("I don't know."),
            Text("WRONG"),
        )
        score = await answer_eval(settings, folder)
    tool_result = [m for m in model.requests[1]["messages"] if m.get("role") == "tool"]
    assert "Biscuit" in tool_result[0]["content"]  # the turn searched the imported set
    judged = model.requests[2]["messages"][-1]["content"]
    assert "Biscuit." in judged and "We adopted a puppy" in judged
    line = score.line()
    assert "single-hop 1.000 (n=1)" in line and "temporal 0.000 (n=1)" in line
    assert "all 0.500 (n=2)" in line
