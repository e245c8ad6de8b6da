"""`roost doctor` on an OpenAI-compatible `llm.base_url` without its `/v1` suggests the suffix.

A newcomer wrote Ollama's address as `http://127.0.0.1:11434`: the server
answers 404 to every path (its API is under /v1), and the doctor's line
said only that the server "has no model". It now ends with the base URL to
try; a server reached under /v1 that has no such model gets no such hint.
Run as a real subprocess against the fake OpenAI server.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI, Status, Text
from tests.spine.test_doctor import API_KEY, lines, roost

ENV = {"ROOST_LLM__API_KEY": API_KEY, "ROOST_LLM__MODEL": "fake-model"}


async def test_a_base_url_without_v1_is_told_to_add_it(home: Path) -> None:
    async with FakeOpenAI(api_key=API_KEY) as llm:
        llm.script(Text("OK"))
        bare = llm.base_url.removesuffix("/v1")  # http://127.0.0.1:PORT, as Ollama's
        code, out = await roost("doctor", ROOST_LLM__BASE_URL=bare, **ENV)
    status, reason = lines(out)["backend"]
    assert (code, status) == (1, "FAIL"), out
    assert "(GET /models answered HTTP 404)" in reason
    assert reason.endswith(
        "; llm.base_url does not end in /v1, where OpenAI-compatible servers (Ollama, vLLM, "
        f'llama.cpp) answer: try base_url = "{bare}/v1"'
    ), reason
    assert API_KEY not in out


async def test_a_404_under_v1_gets_no_such_hint(home: Path) -> None:
    async with FakeOpenAI(api_key=API_KEY, list_models=False) as llm:
        llm.script(Status(404, "model 'fake-model' not found"))
        code, out = await roost("doctor", ROOST_LLM__BASE_URL=llm.base_url, **ENV)
    status, reason = lines(out)["backend"]
    assert (code, status) == (1, "FAIL") and "HTTP 404" in reason, out
    assert "does not end in /v1" not in reason and "try base_url" not in reason
