"""Output end to end: long answers, streaming edits, flood control, 5xx, bad entities."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from bridge.channels.common.render import render
from bridge.channels.telegram.stream import CURSOR
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, FAST, running, tg_settings
from tests.telegram.fake_bot_api import Failure, FakeBotAPI, utf16_len


class DrippingBackend:
    """Streams a fixed answer in small pieces with a pause between them."""

    name = "dripping"

    def __init__(self, answer: str, piece: int, pause_s: float) -> None:
        self.answer, self.piece, self.pause = answer, piece, pause_s
        self.requests: list[ModelRequest] = []

    def describe(self) -> str:
        return "dripping test model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        for start in range(0, len(self.answer), self.piece):
            await asyncio.sleep(self.pause)
            yield TextDelta(self.answer[start : start + self.piece])
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


def long_answer() -> str:
    parts = []
    for n in range(12):
        parts.append(f"## Part {n} 🚀")
        parts.append("Some **bold** words, 👨‍👩‍👧 families and flags 🇩🇪🇫🇷. " * 7)
        code = "\n".join(f"    value_{n}_{i} = {i} * 2  # ✅ line {i}" for i in range(14))
        parts.append(f"```python\n{code}\n```")
    text = "\n\n".join(parts)
    assert len(text) > 10_000
    return text


async def test_long_answer_is_split_into_valid_messages(home: Path, fake: FakeBotAPI) -> None:
    answer = long_answer()
    async with running(tg_settings(home, fake), fake, ScriptedBackend(answer)) as run:
        fake.push_text(ALICE, "write a lot")
        await run.idle()
    messages = fake.sent_to(ALICE)
    assert len(messages) >= 3
    assert all(utf16_len(m.text) <= 4096 for m in messages)
    expected = render(answer)
    assert_pieces_of(expected.text, [m.text for m in messages])
    for m in messages:
        assert "\ufffd" not in m.text
        for e in m.entities:
            assert e["offset"] + e["length"] <= utf16_len(m.text)
    # every code block comes through as pre/python, and its text is intact
    pre_text = "".join(
        _entity_text(m.text, e) for m in messages for e in m.entities if e["type"] == "pre"
    )
    for n in range(12):
        assert f"value_{n}_13 = 13 * 2  # ✅ line 13" in pre_text
    assert {e.get("language") for m in messages for e in m.entities if e["type"] == "pre"} == {
        "python"
    }
    assert len(fake.calls_of("editMessageText")) == 0


def assert_pieces_of(whole: str, pieces: list[str]) -> None:
    """The pieces, in order, are the whole text; only whitespace lies between them."""
    pos = 0
    for piece in pieces:
        found = whole.find(piece, pos)
        assert found >= 0 and not whole[pos:found].strip(), (pos, piece[:40])
        pos = found + len(piece)
    assert not whole[pos:].strip()


def _entity_text(text: str, e: dict[str, object]) -> str:
    raw = text.encode("utf-16-le")
    start, length = int(e["offset"]), int(e["length"])  # type: ignore[call-overload]
    return raw[start * 2 : (start + length) * 2].decode("utf-16-le")


async def test_streaming_edits_one_message_and_finalizes_without_duplicate(
    home: Path, fake: FakeBotAPI
) -> None:
    answer = "Streaming **works**: " + " ".join(f"word{i}" for i in range(60)) + " done."
    backend = DrippingBackend(answer, piece=12, pause_s=0.01)
    async with running(tg_settings(home, fake), fake, backend, options=FAST) as run:
        fake.push_text(ALICE, "stream please")
        await run.idle()
    sends, edits = fake.calls_of("sendMessage"), fake.calls_of("editMessageText")
    assert len(sends) == 1, "one message, edited in place"
    assert len(edits) >= 2, "the answer was shown growing"
    assert sends[0].params["text"].endswith(CURSOR)
    assert all(int(e.params["message_id"]) == fake.sent_to(ALICE)[0].message_id for e in edits)
    final = fake.sent_to(ALICE)
    assert len(final) == 1
    assert final[0].text == render(answer).text
    assert final[0].entities == [{"type": "bold", "offset": 10, "length": 5}]
    assert not edits[-1].params["text"].endswith(CURSOR)


async def test_long_streamed_answer_continues_in_new_messages(home: Path, fake: FakeBotAPI) -> None:
    answer = "\n\n".join(f"Paragraph {i}: " + "lorem ipsum dolor " * 30 for i in range(20))
    backend = DrippingBackend(answer, piece=400, pause_s=0.01)
    async with running(tg_settings(home, fake), fake, backend, options=FAST) as run:
        fake.push_text(ALICE, "long stream")
        await run.idle()
    shown = fake.sent_to(ALICE)
    assert_pieces_of(render(answer).text, [m.text for m in shown])
    assert len(fake.calls_of("sendMessage")) == len(shown), "no message sent twice"
    assert not any(m.text.endswith(CURSOR) for m in shown)


async def test_flood_control_retry_after_is_honoured(home: Path, fake: FakeBotAPI) -> None:
    fake.fail("sendMessage", Failure.flood(retry_after=1))
    async with running(tg_settings(home, fake), fake, ScriptedBackend("after the flood")):
        fake.push_text(ALICE, "hi")
        await fake.wait_until(lambda: bool(fake.sent_to(ALICE)))
    first, second = fake.calls_of("sendMessage")[:2]
    assert second.at - first.at >= 0.95, "waited retry_after before trying again"
    assert [m.text for m in fake.sent_to(ALICE)] == ["after the flood"]


async def test_bad_gateway_is_retried_and_bad_entities_fall_back_to_plain_text(
    home: Path, fake: FakeBotAPI
) -> None:
    fake.fail("sendMessage", Failure.bad_gateway(), Failure.server_error(), Failure.cant_parse())
    async with running(tg_settings(home, fake), fake, ScriptedBackend("some **bold** text")):
        fake.push_text(ALICE, "hi")
        await fake.wait_until(lambda: bool(fake.sent_to(ALICE)))
    calls = fake.calls_of("sendMessage")
    assert len(calls) == 4
    assert [bool(c.params.get("entities")) for c in calls] == [True, True, True, False]
    shown = fake.sent_to(ALICE)
    assert [(m.text, m.entities) for m in shown] == [("some bold text", [])]


async def test_a_reply_that_cannot_be_delivered_is_logged(
    home: Path, fake: FakeBotAPI, caplog: object
) -> None:
    import logging

    fake.fail("sendMessage", *[Failure.bad_gateway() for _ in range(6)])
    with caplog.at_level(logging.ERROR, logger="bridge.channels.telegram.channel"):  # type: ignore[attr-defined]
        async with running(tg_settings(home, fake), fake, ScriptedBackend("lost")) as run:
            fake.push_text(ALICE, "hi")
            await run.idle()
            assert len(fake.calls_of("sendMessage")) == 6
    records = [r.getMessage() for r in caplog.records]  # type: ignore[attr-defined]
    assert any("was not delivered" in r for r in records)


async def test_a_link_address_telegram_refuses_falls_back_to_plain_text(
    home: Path, fake: FakeBotAPI
) -> None:
    fake.fail("sendMessage", Failure(400, "Bad Request: wrong HTTP URL specified"))
    answer = ScriptedBackend("see [the docs](https://x.)")
    async with running(tg_settings(home, fake), fake, answer):
        fake.push_text(ALICE, "hi")
        await fake.wait_until(lambda: bool(fake.sent_to(ALICE)))
    shown = fake.sent_to(ALICE)
    assert [(m.text, m.entities) for m in shown] == [("see the docs", [])]
