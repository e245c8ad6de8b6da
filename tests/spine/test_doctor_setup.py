"""`roost doctor` before and around the first start, as a newcomer runs it (real subprocess).

A model that is not listed and whose chat request 404s fails every turn: a
FAIL (exit 1) naming the default model when `llm.model` was never written,
not a warning with exit 0. A configuration `roost serve` refuses (a Telegram
webhook without its URL) is a FAIL, not "config ok". A home not made yet is a
warning like the database's (the first start makes it); a ROOST_HOME that is
a file says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_doctor import API_KEY, lines, roost
from tests.spine.test_reload import write_config


async def test_an_unset_model_the_server_lacks_fails_naming_the_default(home: Path) -> None:
    async with FakeOpenAI(api_key=API_KEY, models=["m"]) as llm:
        env = {"ROOST_LLM__BASE_URL": llm.base_url, "ROOST_LLM__API_KEY": API_KEY}
        code, out = await roost("doctor", **env)
        named, named_out = await roost("doctor", **env, ROOST_LLM__MODEL="nosuch")
        good, good_out = await roost("doctor", **env, ROOST_LLM__MODEL="m")
    status, reason = lines(out)["backend"]
    assert (code, status) == (1, "FAIL"), out
    assert "model gpt-4o-mini (llm.model is unset: the default) not listed (m)" in reason
    assert "; a chat request to it failed too, not_found: " in reason and "HTTP 404" in reason
    assert named == 1 and lines(named_out)["backend"][0] == "FAIL", named_out
    assert ": model nosuch not listed (m); a chat request" in lines(named_out)["backend"][1]
    assert "model is unset" not in named_out
    # the reader is the operator: the setting as the file and the environment name it (s46)
    said = lines(named_out)["backend"][1]
    assert said.endswith(
        "check llm.model (ROOST_LLM__MODEL) and llm.base_url (ROOST_LLM__BASE_URL)."
    )
    assert "operator" not in said, said
    assert good == 0 and lines(good_out)["backend"][0] == "ok", good_out
    assert API_KEY not in out + named_out


async def test_a_config_serve_refuses_is_a_failure(home: Path) -> None:
    webhook = {
        "ROOST_TELEGRAM__TOKEN": "123456:" + "A" * 35,
        "ROOST_TELEGRAM__MODE": "webhook",
        "ROOST_TELEGRAM__API_BASE_URL": "http://127.0.0.1:9/bot",
        "ROOST_LLM__PROVIDER": "offline",
    }
    code, out = await roost("doctor", "--timeout", "1", **webhook)
    assert code == 1
    status, reason = lines(out)["config"]
    assert status == "FAIL", out
    assert reason.endswith(
        "but `roost serve` refuses: "
        "telegram.webhook_url is required when telegram.mode is 'webhook'"
    )
    assert "A" * 35 not in out
    serve, said = await roost("serve", **webhook, ROOST_WEB__PORT="0")
    assert serve == 78 and "telegram.webhook_url is required" in said  # the same words


@pytest.mark.parametrize(
    ("tenant", "said"),
    [
        ("telgram_ids = [123]", "tenants.a.telgram_ids: no platform of that name"),
        ('telegram_ids = ["abc"]', "tenants.a.telegram_ids: 'abc' is not a Telegram identity"),
    ],
)
async def test_a_tenant_id_list_serve_refuses_is_a_failure(
    home: Path, tenant: str, said: str
) -> None:
    """A typo in a `<platform>_ids` key, or an id the platform cannot read, stops `roost
    serve` (exit 78): doctor says so with the same words, never "ok config"."""
    write_config(f"[tenants.a]\n{tenant}\n")
    offline = {"ROOST_LLM__PROVIDER": "offline"}
    code, out = await roost("doctor", "--timeout", "1", **offline)
    status, reason = lines(out)["config"]
    assert (code, status) == (1, "FAIL"), out
    assert "but `roost serve` refuses: invalid configuration: " + said in reason, reason
    serve, refused = await roost("serve", **offline, ROOST_WEB__PORT="0")
    assert serve == 78, refused
    (line,) = refused.splitlines()
    assert line.startswith("roost: ") and line.removeprefix("roost: ") in reason  # same words


async def test_before_the_first_start_the_home_is_a_warning(home: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "not" / "yet"
    code, out = await roost("doctor", ROOST_HOME=str(fresh), ROOST_LLM__PROVIDER="offline")
    status, reason = lines(out)["home"]
    assert (status, reason) == ("warn", f"{fresh} does not exist yet (created on first start)")
    assert "FAIL" not in out and code == 0, out
    assert not fresh.exists()  # nothing created


async def test_a_home_that_is_a_file_says_so(home: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "home-file"
    a_file.write_text("")
    code, out = await roost("doctor", ROOST_HOME=str(a_file), ROOST_LLM__PROVIDER="offline")
    status, reason = lines(out)["home"]
    assert code == 1 and status == "FAIL", out
    assert reason.startswith(f"{a_file} is not a directory") and "ROOST_HOME" in reason
    assert "does not exist" not in reason
