"""A roost wired to the fake OpenAI server over HTTP, with the real audit chain file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from tests.fakes.fake_openai import FakeOpenAI

API_KEY = "sk-test-key-000000000000"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=API_KEY, models=["m1"]) as server:
        yield server


@pytest.fixture
async def wired(
    home: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Roost]:
    """Real OpenAI backend, real sandbox, real SQLite, real chain.jsonl under `home`."""
    monkeypatch.setenv("ROOST_LLM__BASE_URL", fake.base_url)
    monkeypatch.setenv("ROOST_LLM__API_KEY", API_KEY)
    monkeypatch.setenv("ROOST_LLM__MODEL", "m1")
    monkeypatch.setenv("ROOST_LLM__MAX_RETRIES", "0")
    made = await build(load_settings())
    yield made
    await made.aclose()
