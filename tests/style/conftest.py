"""The style tests' databases (`helpers.open_store`) are closed after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.style.helpers import OPENED


@pytest.fixture(autouse=True)
async def close_stores() -> AsyncIterator[None]:
    yield
    while OPENED:
        await OPENED.pop().aclose()
