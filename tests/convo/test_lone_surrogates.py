"""Every text of a message is valid Unicode once the core took it, whatever brought it.

A lone surrogate (U+D800-U+DFFF, what a JSON `"\\ud800"` escape makes) is no
valid Unicode and no database stores it. Before the core's fix the model was
asked and paid, then storing the turn failed ("Something went wrong ...
Nothing was lost; please try again"), a retry failed the same way and the
message never reached the history. Now `Core.handle` / `Core.answer` replace
each lone surrogate of the text, the quote, the names and the attachments'
names with U+FFFD first (`valid_inbound`), so any channel's message - one
that does not clean it itself - is answered and kept.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import Settings
from bridge.core.sessions import SessionKey
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Attachment, Inbound, valid_inbound, valid_unicode
from tests.conftest import Clock, ScriptedBackend


def test_valid_unicode_replaces_only_lone_surrogates() -> None:
    assert valid_unicode("plain ä 😀") == "plain ä 😀"
    text = "x"
    assert valid_unicode(text) is text  # nothing to do: the same object
    assert valid_unicode("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert valid_unicode("\ud83d\ude00 \ud83d") == "😀 \ufffd"  # a pair split in two joins


def test_valid_inbound_covers_every_text_it_carries() -> None:
    photo = Attachment("photo", "/in/p\ud800.jpg", "image/jpeg", "cat\udc00.jpg")
    inbound = Inbound(
        "web", "id\ud800", "chat\ud800", "hi \ud800", "m\ud800", display_name="Al\udfffice",
        bot_name="bot\ud800", quoted="earlier \udc00", attachments=(photo,),
    )  # fmt: skip
    valid = valid_inbound(inbound)
    assert valid.text == "hi \ufffd" and valid.quoted == "earlier \ufffd"
    assert (valid.identity, valid.chat, valid.msg_id) == ("id\ufffd", "chat\ufffd", "m\ufffd")
    assert (valid.display_name, valid.bot_name) == ("Al\ufffdice", "bot\ufffd")
    assert valid.attachments[0].name == "cat\ufffd.jpg"
    assert valid.attachments[0].path == "/in/p\ufffd.jpg"
    clean = Inbound("web", "local", "c1", "fine", "m1", attachments=(photo,))
    assert valid_inbound(valid) is valid  # nothing left to replace
    assert valid_inbound(clean).attachments[0].name == "cat\ufffd.jpg"


@pytest.fixture
def backend() -> ScriptedBackend:
    return ScriptedBackend("an answer", "another answer")


@pytest.fixture
async def wired(settings: Settings, clock: Clock, backend: ScriptedBackend) -> AsyncIterator[Roost]:
    made = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    yield made
    await made.aclose()


async def test_a_message_with_lone_surrogates_is_answered_and_kept(
    wired: Roost, backend: ScriptedBackend, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    sent = Inbound(
        "web", "local", "c1", "tell me \ud800 more", "m1",
        display_name="Al\udfffice", quoted="an earlier \udc00 line",
    )  # fmt: skip
    final = await wired.core.handle(sent)
    assert (final.kind, final.text) == ("answer", "an answer")
    asked = backend.requests[0].messages[-1].content
    assert "tell me \ufffd more" in asked and "an earlier \ufffd line" in asked
    final = await wired.core.handle(Inbound("web", "local", "c1", "and then?", "m2"))
    assert (final.kind, final.text) == ("answer", "another answer")
    key = SessionKey("local", "web", "c1")
    history = (await wired.sessions.load(key, clock())).history
    users = [m.content for m in history if m.role == "user"]
    assert len(users) == 2 and users[0].endswith("tell me \ufffd more")
    assert users[1] == "and then?"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
