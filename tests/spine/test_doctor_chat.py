"""`roost doctor` on a model server without `GET /models`: one chat request decides.

Several OpenAI-compatible servers answer the optional model list with 404
(llm-mock-api among them) while chat works; the doctor must not fail them,
and must fail one whose chat does not work. Run as a real subprocess.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI, Status, Text
from tests.spine.test_doctor import API_KEY, lines, roost

ENV = {"ROOST_LLM__API_KEY": API_KEY, "ROOST_LLM__MODEL": "fake-model"}


async def test_no_model_list_but_chat_works_is_ok(home: Path) -> None:
    async with FakeOpenAI(api_key=API_KEY, list_models=False) as llm:
        llm.script(Text("OK"))
        _code, out = await roost("doctor", ROOST_LLM__BASE_URL=llm.base_url, **ENV)
    backend = lines(out)["backend"]
    assert backend[0] == "ok", out
    assert "fake-model answered a chat request (GET /models answered HTTP 404)" in backend[1]
    (sent,) = llm.requests  # one request, as a turn would send it, and no retry
    assert sent["model"] == "fake-model" and sent["stream"] is True
    assert API_KEY not in out


async def test_no_model_list_and_chat_fails_is_a_failure(home: Path) -> None:
    async with FakeOpenAI(api_key=API_KEY, list_models=False) as llm:
        llm.script(Status(500, "upstream gpu-7 at 10.0.0.5 is out of memory"))
        code, out = await roost("doctor", ROOST_LLM__BASE_URL=llm.base_url, **ENV)
    backend = lines(out)["backend"]
    assert code == 1 and backend[0] == "FAIL", out  # (the home does not exist either)
    assert "a chat request to fake-model failed, unavailable" in backend[1]
    assert "HTTP 500" in backend[1] and "(GET /models answered HTTP 404)" in backend[1]
    assert len(llm.requests) == 1  # no retries in the doctor
    for leaked in ("gpu-7", "10.0.0.5", API_KEY):
        assert leaked not in out
