"""select_backend rules and the offline backend."""

from __future__ import annotations

import pytest

from bridge.llm.offline import OfflineBackend
from bridge.llm.select import select_backend
from bridge.types.backend import BackendError, Finish, TextDelta
from tests.fresh import python_c
from tests.llm.support import collect


async def test_auto_with_a_base_url_picks_openai():
    backend, why = select_backend("auto", "http://127.0.0.1:11434/v1", None, "llama3.2")
    try:
        assert backend.name == "openai"
        assert backend.describe() == "openai model=llama3.2"  # /status shows no address
        assert why.endswith("openai model=llama3.2 at 127.0.0.1:11434")  # the log does
        assert why.startswith("provider auto -> openai (base_url is set)")
    finally:
        await backend.aclose()


async def test_auto_with_only_a_key_uses_the_openai_url_and_hides_the_key():
    backend, why = select_backend("auto", None, "sk-secret-key-42", "gpt-4o-mini", timeout_s=5)
    try:
        assert backend.describe() == "openai model=gpt-4o-mini"
        assert why.endswith("at api.openai.com")
        assert "api_key is set" in why and "ROOST_" not in why
        assert "sk-secret-key-42" not in why
    finally:
        await backend.aclose()


@pytest.mark.parametrize("base_url,key", [(None, None), ("", "  ")])
def test_auto_without_url_or_key_is_offline(base_url, key):
    backend, why = select_backend("auto", base_url, key, "m")
    assert isinstance(backend, OfflineBackend)
    assert why.startswith("provider auto -> offline")


def test_offline_can_be_forced():
    backend, why = select_backend("Offline", "http://127.0.0.1:1/v1", "k", "m")
    assert backend.name == "offline" and "offline" in why


def test_openai_without_url_or_key_is_a_config_error():
    with pytest.raises(BackendError) as info:
        select_backend("openai", None, None, "m")
    assert info.value.kind == "config"
    assert "ROOST_LLM__BASE_URL" in info.value.user_message


def test_openai_needs_a_model_name():
    with pytest.raises(BackendError) as info:
        select_backend("openai", "http://127.0.0.1:1/v1", None, " ")
    assert info.value.kind == "config"


def test_unknown_provider_names_the_allowed_values():
    with pytest.raises(ValueError, match="auto, openai, anthropic, claude_cli, offline"):
        select_backend("antropic", None, None, "m")


def test_offline_selection_does_not_import_aiohttp():
    code = (
        "import sys\n"
        "from bridge.llm.select import select_backend\n"
        "select_backend('auto', None, None, 'm')\n"
        "print('aiohttp' in sys.modules)\n"
    )
    out = python_c(code)
    assert out.stdout.strip() == "False"


async def test_offline_backend_explains_how_to_configure_a_model():
    backend = OfflineBackend()
    events = await collect(backend)
    assert isinstance(events[-1], Finish) and events[-1].reason == "stop"
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    for needle in (
        "ROOST_LLM__BASE_URL",
        "http://127.0.0.1:11434/v1",
        "ROOST_LLM__API_KEY",
        "ROOST_LLM__MODEL",
        "[llm]",
        "roost.toml",
        "/help",
    ):
        assert needle in text
    assert backend.describe() == "offline (no model configured)"
    await backend.aclose()


async def test_auto_with_an_anthropic_key_picks_anthropic_not_openai():
    # an Anthropic key must never be sent to api.openai.com
    backend, why = select_backend("auto", None, "sk-ant-api03-secret", "gpt-4o-mini")
    try:
        assert backend.name == "anthropic"
        assert backend.describe() == "anthropic model=claude-sonnet-4-5"
        assert why.endswith("at api.anthropic.com") and "sk-ant-api03-secret" not in why
        assert "ROOST_LLM__MODEL not set for Claude" in why
    finally:
        await backend.aclose()


async def test_anthropic_forced_keeps_a_named_model_and_a_base_url():
    backend, why = select_backend(
        "anthropic", "http://127.0.0.1:9/", "k", "claude-haiku-4-5", max_output_tokens=100
    )
    try:
        assert backend.describe() == "anthropic model=claude-haiku-4-5"
        assert why.startswith("provider anthropic (set explicitly)")
        assert why.endswith("at 127.0.0.1:9")
    finally:
        await backend.aclose()


def test_anthropic_without_a_key_is_a_config_error():
    with pytest.raises(BackendError) as info:
        select_backend("anthropic", None, None, "claude-sonnet-4-5")
    assert info.value.kind == "config"
    assert "ROOST_LLM__API_KEY" in info.value.user_message


async def test_claude_cli_takes_its_path_and_ignores_http_settings():
    backend, why = select_backend(
        "claude_cli", None, None, "gpt-4o-mini", claude_path="/opt/claude", max_retries=2
    )
    assert backend.name == "claude_cli"
    assert backend.describe() == "claude_cli model=default"
    assert "claude_cli" in why
    await backend.aclose()
