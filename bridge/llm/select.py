"""Pick the model backend from configuration, and say why.

`select_backend` applies the `ROOST_LLM__PROVIDER` rules: `auto` (the
default) picks `openai` when a base URL or an API key is configured and
`offline` otherwise; `openai` and `offline` force one. The aiohttp-based
backend module is imported only when it is chosen.
"""

from __future__ import annotations

from typing import Any

from bridge.llm.offline import OfflineBackend
from bridge.types.backend import Backend, BackendError

PROVIDERS = ("auto", "openai", "offline")
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def select_backend(
    provider: str,
    base_url: str | None,
    api_key: str | None,
    model: str,
    **kw: Any,
) -> tuple[Backend, str]:
    """Build the backend; also return a one-line reason for the log.

    Extra keyword arguments go to the `OpenAIBackend` constructor.
    Raises ValueError for an unknown provider and BackendError("config")
    when `openai` is forced with neither a base URL nor a key.
    """
    choice = (provider or "auto").strip().lower()
    if choice not in PROVIDERS:
        raise ValueError(
            f"unknown LLM provider {provider!r}: ROOST_LLM__PROVIDER must be one of "
            + ", ".join(PROVIDERS)
        )
    base_url = (base_url or "").strip() or None
    api_key = (api_key or "").strip() or None
    if choice == "offline":
        return OfflineBackend(), "provider offline (set explicitly)"
    if choice == "auto":
        if base_url:
            why = "provider auto -> openai (ROOST_LLM__BASE_URL is set)"
        elif api_key:
            why = (
                "provider auto -> openai (ROOST_LLM__API_KEY is set; "
                f"base URL {OPENAI_DEFAULT_BASE_URL})"
            )
        else:
            return OfflineBackend(), (
                "provider auto -> offline "
                "(neither ROOST_LLM__BASE_URL nor ROOST_LLM__API_KEY is set)"
            )
    else:
        if not base_url and not api_key:
            raise BackendError(
                "config",
                "ROOST_LLM__PROVIDER is openai but neither ROOST_LLM__BASE_URL nor "
                "ROOST_LLM__API_KEY is set",
            )
        why = "provider openai (set explicitly)"
    if not model.strip():
        raise BackendError("config", "ROOST_LLM__MODEL is empty: name the model to use")
    from bridge.llm.openai import OpenAIBackend  # aiohttp only when chosen

    backend = OpenAIBackend(base_url or OPENAI_DEFAULT_BASE_URL, api_key, model.strip(), **kw)
    return backend, f"{why}: {backend.describe()} at {backend.server()}"
