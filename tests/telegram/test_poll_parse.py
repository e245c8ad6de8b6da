"""A `getUpdates` answer is parsed once: `PollWatch` hands its parse to the durable inbox
(`received`) and python-telegram-bot reads that same parse; an answer the inbox could
not store is not read by the library (nothing is confirmed)."""

from __future__ import annotations

from typing import Any

import pytest
from telegram.error import NetworkError
from telegram.request import HTTPXRequest

from bridge.channels.telegram.connect import PollWatch
from tests.telegram.conftest import ALICE, TOKEN
from tests.telegram.fake_bot_api import FakeBotAPI


async def test_the_inbox_and_the_library_share_one_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bodies: list[dict[str, Any]] = []
    parses: list[bytes] = []
    real = HTTPXRequest.parse_json_payload

    def counted(payload: bytes) -> Any:
        parses.append(payload)
        return real(payload)

    monkeypatch.setattr(HTTPXRequest, "parse_json_payload", staticmethod(counted))

    async def received(body: dict[str, Any]) -> None:
        bodies.append(body)

    async with FakeBotAPI(TOKEN, max_poll_s=0.0) as fake:
        watch = PollWatch(lambda code: None, received)
        await watch.initialize()
        try:
            fake.push_text(ALICE, "hello")
            updates = await watch.post(f"{fake.base_url}{TOKEN}/getUpdates")
        finally:
            await watch.shutdown()
    (body,) = bodies
    assert updates is body["result"], "the library read the inbox's parse"
    assert updates[0]["message"]["text"] == "hello"
    assert len(parses) == 1


async def test_an_answer_the_inbox_could_not_store_is_not_read() -> None:
    """The next answer (the same update, not confirmed) is read from its own bytes."""
    stored: list[dict[str, Any]] = []
    away = [True]

    async def received(body: dict[str, Any]) -> None:
        if away[0]:
            raise OSError("the database went away")
        stored.append(body)

    async with FakeBotAPI(TOKEN, max_poll_s=0.0) as fake:
        watch = PollWatch(lambda code: None, received)
        await watch.initialize()
        url = f"{fake.base_url}{TOKEN}/getUpdates"
        try:
            fake.push_text(ALICE, "hello")
            with pytest.raises(NetworkError):
                await watch.post(url)
            away[0] = False
            updates = await watch.post(url)
        finally:
            await watch.shutdown()
    (body,) = stored
    assert updates is body["result"] and updates[0]["message"]["text"] == "hello"
