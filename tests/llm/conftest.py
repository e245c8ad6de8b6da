"""Fixtures for the model-backend tests: a fake server and backends bound to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from bridge.llm.openai import OpenAIBackend
from tests.fakes.fake_openai import FakeOpenAI
from tests.llm.support import KEY, MODEL, SleepRecorder


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, models=[MODEL]) as server:
        yield server


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
async def make_backend(
    fake: FakeOpenAI, sleeps: SleepRecorder
) -> AsyncIterator[Callable[..., OpenAIBackend]]:
    made: list[OpenAIBackend] = []

    def make(**kw: Any) -> OpenAIBackend:
        args: dict[str, Any] = {
            "base_url": fake.base_url,
            "api_key": KEY,
            "model": MODEL,
            "backoff_base_s": 0.01,
            "sleep": sleeps,
        }
        args.update(kw)
        backend = OpenAIBackend(
            args.pop("base_url"), args.pop("api_key"), args.pop("model"), **args
        )
        made.append(backend)
        return backend

    yield make
    for backend in made:
        await backend.aclose()
