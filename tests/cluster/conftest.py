"""The session's PostgreSQL server and a database per test (tests/storage's fixtures), and
the fake model and Bot API every cluster test runs its instances against."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.kit import KEY, TOKEN, Cluster, ClusterOf
from tests.fakes.fake_openai import FakeOpenAI
from tests.storage.conftest import pg_server, pg_url
from tests.telegram.fake_bot_api import FakeBotAPI

__all__ = ["bot_api", "cluster_of", "model", "pg_server", "pg_url"]


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, models=["m1"]) as server:
        yield server


@pytest.fixture
async def bot_api() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI(TOKEN) as server:
        yield server


@pytest.fixture
async def cluster_of(
    tmp_path: Path, pg_url: str, model: FakeOpenAI, bot_api: FakeBotAPI
) -> AsyncIterator[ClusterOf]:
    """Make a `Cluster` on the test's PostgreSQL, model and Bot API (keyword options as
    `Cluster` takes them; no Telegram people unless given); killed at the test's end."""
    made: list[Cluster] = []

    def make(**options: Any) -> Cluster:
        cluster = Cluster(
            tmp_path,
            db_url=pg_url,
            model_url=model.base_url,
            bot_api_url=bot_api.base_url,
            **{"people": [], **options},
        )
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        await cluster.aclose()
