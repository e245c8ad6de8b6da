"""A roost built in process on the fake OpenAI-compatible model: the fixture body
that the turn tests over a scripted model share (`responder` answers each request;
`env` adds settings as `ROOST_*` variables)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from tests.fakes.fake_openai import FakeOpenAI


@contextlib.asynccontextmanager
async def roost_on_fake(
    monkeypatch: pytest.MonkeyPatch, key: str, responder: Any, **env: str
) -> AsyncIterator[tuple[Roost, FakeOpenAI]]:
    """(the roost, the fake model) until the block ends; the model is `m1` with `key`."""
    async with FakeOpenAI(api_key=key, models=["m1"], responder=responder) as fake:
        monkeypatch.setenv("ROOST_LLM__BASE_URL", fake.base_url)
        monkeypatch.setenv("ROOST_LLM__API_KEY", key)
        monkeypatch.setenv("ROOST_LLM__MODEL", "m1")
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        roost = await build(load_settings())
        try:
            yield roost, fake
        finally:
            await roost.aclose()
