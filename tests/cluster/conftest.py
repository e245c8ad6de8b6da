"""The session's PostgreSQL server and a database per test (tests/storage's fixtures), and
the fake model and Bot API every cluster test runs its instances against."""

from collections.abc import AsyncIterator

import pytest

from tests.cluster.kit import KEY, TOKEN
from tests.fakes.fake_openai import FakeOpenAI
from tests.storage.conftest import pg_server, pg_url
from tests.telegram.fake_bot_api import FakeBotAPI

__all__ = ["bot_api", "model", "pg_server", "pg_url"]


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, models=["m1"]) as server:
        yield server


@pytest.fixture
async def bot_api() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI(TOKEN) as server:
        yield server
