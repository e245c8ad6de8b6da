"""Pick the model backend from configuration, and say why.

`select_backend` applies the `ROOST_LLM__PROVIDER` rules: `auto` (the
default) picks `anthropic` for an Anthropic key (`sk-ant-...`) without a
base URL, `openai` when a base URL or another API key is configured and
`offline` otherwise; `openai`, `anthropic`, `claude_cli` and `offline`
force one. A backend module (aiohttp, subprocess) is imported only when it
is chosen. The reason names the setting (`base_url`, `api_key` of `[llm]` or
`[models.X]`), never where it came from: the file or `ROOST_*` alike.
Keyword arguments a backend does not take are dropped, so one call serves
every provider.
"""

from __future__ import annotations

import inspect
from typing import Any

from bridge.llm.offline import OfflineBackend
from bridge.types.backend import Backend, BackendError

PROVIDERS = ("auto", "openai", "anthropic", "claude_cli", "offline")
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"  # the config default; not a Claude model
ANTHROPIC_DEFAULT_MODEL = "claude-sonnet-4-5"


def _fitting(cls: Any, kw: dict[str, Any]) -> dict[str, Any]:
    accepted = inspect.signature(cls).parameters
    return {k: v for k, v in kw.items() if k in accepted}


def select_backend(
    provider: str,
    base_url: str | None,
    api_key: str | None,
    model: str,
    **kw: Any,
) -> tuple[Backend, str]:
    """Build the backend; also return a one-line reason for the log.

    Raises ValueError for an unknown provider and BackendError("config")
    when `openai` is forced with neither a base URL nor a key, or
    `anthropic` without a key.
    """
    choice = (provider or "auto").strip().lower()
    if choice not in PROVIDERS:
        raise ValueError(
            f"unknown LLM provider {provider!r}: ROOST_LLM__PROVIDER must be one of "
            + ", ".join(PROVIDERS)
        )
    base_url = (base_url or "").strip() or None
    api_key = (api_key or "").strip() or None
    model = model.strip()
    if choice == "offline":
        return OfflineBackend(chosen=True), "provider offline (set explicitly)"
    if choice == "claude_cli":
        return _claude_cli(model, kw)
    if choice == "auto" and not base_url and api_key and api_key.startswith("sk-ant-"):
        choice, why = "anthropic", "provider auto -> anthropic (api_key is an Anthropic key)"
    elif choice == "anthropic":
        why = "provider anthropic (set explicitly)"
    if choice == "anthropic":
        return _anthropic(base_url, api_key, model, kw, why)
    if choice == "auto":
        if base_url:
            why = "provider auto -> openai (base_url is set)"
        elif api_key:
            why = f"provider auto -> openai (api_key is set; base URL {OPENAI_DEFAULT_BASE_URL})"
        else:
            return OfflineBackend(), (
                "provider auto -> offline (neither base_url nor api_key is set)"
            )
    else:
        if not base_url and not api_key:
            raise BackendError(
                "config",
                "ROOST_LLM__PROVIDER is openai but neither ROOST_LLM__BASE_URL nor "
                "ROOST_LLM__API_KEY is set",
            )
        why = "provider openai (set explicitly)"
    if not model:
        raise BackendError("config", "ROOST_LLM__MODEL is empty: name the model to use")
    from bridge.llm.openai import OpenAIBackend  # aiohttp only when chosen

    kw = _fitting(OpenAIBackend, kw)
    backend = OpenAIBackend(base_url or OPENAI_DEFAULT_BASE_URL, api_key, model, **kw)
    return backend, f"{why}: {backend.describe()} at {backend.server()}"


def _anthropic(
    base_url: str | None, api_key: str | None, model: str, kw: dict[str, Any], why: str
) -> tuple[Backend, str]:
    from bridge.llm.anthropic import DEFAULT_BASE_URL, AnthropicBackend

    if not api_key:
        raise BackendError(
            "config",
            "ROOST_LLM__PROVIDER is anthropic but ROOST_LLM__API_KEY is not set: "
            "put an Anthropic API key (sk-ant-...) there",
        )
    if model in ("", OPENAI_DEFAULT_MODEL):
        why += f"; ROOST_LLM__MODEL not set for Claude, using {ANTHROPIC_DEFAULT_MODEL}"
        model = ANTHROPIC_DEFAULT_MODEL
    kw = _fitting(AnthropicBackend, kw)
    backend = AnthropicBackend(api_key, model, base_url=base_url or DEFAULT_BASE_URL, **kw)
    return backend, f"{why}: {backend.describe()} at {backend.server()}"


def _claude_cli(model: str, kw: dict[str, Any]) -> tuple[Backend, str]:
    from bridge.llm.claude_cli import ClaudeCliBackend

    if model == OPENAI_DEFAULT_MODEL:
        model = ""  # the CLI's own default model
    backend = ClaudeCliBackend(model=model, **_fitting(ClaudeCliBackend, kw))
    return backend, f"provider claude_cli (set explicitly): {backend.describe()}"
