"""`roost doctor` and a model server whose model list needs no key (llama.cpp's does not).

The fake server answers `GET /models` to anyone and refuses a chat request
without the right bearer key, as llama.cpp started with `--api-key` does. A
wrong key used to pass the doctor ("ok backend ... 1 model") while every turn
failed with 401; now the doctor follows the list with one chat request and a
rejected key is a FAIL naming the key setting (and its variable), never the key.
Run as a real subprocess.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.models.conftest import write_config
from tests.spine.test_doctor import API_KEY, lines, roost

WRONG = "sk-proj-WrongKeyWrongKeyWrongKey0000000000"


async def test_a_wrong_key_fails_though_the_model_list_needs_none(home: Path) -> None:
    async with FakeOpenAI(api_key=API_KEY) as llm:
        env = {"ROOST_LLM__BASE_URL": llm.base_url, "ROOST_LLM__MODEL": "fake-model"}
        code, out = await roost("doctor", **env, ROOST_LLM__API_KEY=WRONG)
        asked = len(llm.requests)
        _, good = await roost("doctor", **env, ROOST_LLM__API_KEY=API_KEY)
    assert code == 1, out
    where = llm.base_url  # as base_url has it, /v1 included
    assert lines(out)["backend"] == (
        "FAIL",
        f"{where}: GET /models answered, but the server refused a chat request (HTTP 401): "
        "the API key was rejected; check llm.api_key (ROOST_LLM__API_KEY)",
    )
    assert asked == 1  # one chat request, no retry
    assert WRONG not in out and WRONG[8:20] not in out
    backend = lines(good)["backend"]
    assert backend[0] == "ok", good
    assert backend[1].endswith("fake-model among them; a chat request was answered")


async def test_a_named_models_wrong_key_names_its_table(home: Path) -> None:
    async with FakeOpenAI(api_key=API_KEY) as llm:
        write_config(
            f'[models.local]\nbase_url = "{llm.base_url}"\napi_key = "{WRONG}"\n'
            'model = "fake-model"\n'
        )
        env = {"ROOST_LLM__BASE_URL": llm.base_url, "ROOST_LLM__MODEL": "fake-model"}
        _, out = await roost("doctor", **env, ROOST_LLM__API_KEY=API_KEY)
    checks = lines(out)
    assert checks["backend"][0] == "ok", out
    status, reason = checks["model:local"]
    assert status == "FAIL" and reason.endswith(
        "check models.local.api_key (ROOST_MODELS__LOCAL__API_KEY)"
    ), out
    assert WRONG not in out
