"""`roost doctor` names the address it checked, path included (s46 newcomer, finding 9).

The backend line said "http://127.0.0.1:38823: 1 model", so someone checking whether
they wrote `/v1` into `llm.base_url` could not see it on an ok line. It now shows
the base URL as checked (scheme, host, port and path) and never the user, password or
query a URL may carry. A real subprocess against the fake OpenAI server.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI, Text
from tests.spine.test_doctor import API_KEY, lines, roost

ENV = {"ROOST_LLM__API_KEY": API_KEY, "ROOST_LLM__MODEL": "fake-model"}


async def test_the_backend_line_shows_the_base_url_with_its_path(home: Path) -> None:
    async with FakeOpenAI(api_key=API_KEY, models=["fake-model"]) as llm:
        llm.script(Text("OK"))
        _, out = await roost("doctor", ROOST_LLM__BASE_URL=llm.base_url, **ENV)
    status, reason = lines(out)["backend"]
    assert status == "ok", out
    assert reason.startswith(f"{llm.base_url}: 1 model, fake-model among them"), reason


async def test_no_query_is_shown(home: Path) -> None:
    """(A user and password in base_url are refused by the configuration itself.)"""
    async with FakeOpenAI(api_key=API_KEY, models=["fake-model"]) as llm:
        llm.script(Text("OK"))
        _, out = await roost("doctor", ROOST_LLM__BASE_URL=llm.base_url + "?key=qu3ry", **ENV)
    _, reason = lines(out)["backend"]
    assert reason.startswith(f"{llm.base_url}: "), out
    assert "qu3ry" not in out and API_KEY not in out


async def test_without_v1_the_line_blames_the_address_not_the_model(home: Path) -> None:
    """s47 as a newcomer: the line said "The model server has no model 'llama3.2' ...
    check llm.model" before the /v1 hint, when every path was missing."""
    async with FakeOpenAI(api_key=API_KEY, models=["fake-model"]) as llm:
        bare = llm.base_url.removesuffix("/v1")
        _, out = await roost("doctor", ROOST_LLM__BASE_URL=bare, **ENV)
    status, reason = lines(out)["backend"]
    assert status == "FAIL" and reason.startswith(
        f"{bare}: a chat request to fake-model failed, HTTP 404 too (GET /models answered "
        "HTTP 404); llm.base_url does not end in /v1"
    ), reason
    assert "no model" not in reason and "check llm.model" not in reason
