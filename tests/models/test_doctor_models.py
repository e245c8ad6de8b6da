"""`roost doctor` checks every configured model, one line each, as a real subprocess.

`[llm]` is the `backend` line; each `[models.X]` gets a `model:X` line: its
server answers GET /models and lists its model, or the line says why not.
A model whose server is gone fails the doctor; no key reaches the output.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.models.conftest import KEY_A, KEY_B, models_toml, write_config
from tests.spine.test_doctor import closed_port, lines, roost

KEY_C = "sk-test-gone-2222222222222"


async def test_every_named_model_gets_its_own_line(
    home: Path, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    gone = f"http://127.0.0.1:{closed_port()}/v1"
    write_config(
        models_toml(first, second)
        + f'[models.gone]\nbase_url = "{gone}"\napi_key = "{KEY_C}"\nmodel = "x-1"\n'
        + f'[models.typo]\nbase_url = "{second.base_url}"\napi_key = "{KEY_B}"\nmodel = "big-3"\n'
    )
    code, out = await roost("doctor", ROOST_LLM__PROVIDER="auto")
    assert code == 1, out  # a model that cannot be reached fails the doctor
    checks = lines(out)
    assert checks["backend"][0] == "ok" and "small-1 among them" in checks["backend"][1]
    assert checks["model:smart"][0] == "ok" and "big-2 among them" in checks["model:smart"][1]
    assert checks["model:gone"][0] == "FAIL" and "unreachable" in checks["model:gone"][1]
    # not listed, and its chat request fails too: a FAIL (a listed-but-missing model
    # that still answers would only warn)
    status, reason = checks["model:typo"]
    assert status == "FAIL", checks["model:typo"]
    assert reason.startswith(f"{second.base_url}: model big-3 not listed (big-2)"), reason
    assert "a chat request to it failed too" in reason, reason
    # the typo'd table's own settings, not [llm]'s (s46: it said ROOST_LLM__MODEL)
    assert reason.endswith("check [models.typo] model and [models.typo] base_url."), reason
    names = [line.split()[1] for line in out.splitlines()]
    assert names.index("backend") + 3 == names.index("model:typo")  # together, sorted
    for key in (KEY_A, KEY_B, KEY_C):
        assert key not in out
