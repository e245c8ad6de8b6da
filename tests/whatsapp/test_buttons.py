"""One-tap offers as WhatsApp interactive messages, and what happens when they do not fit.

Meta's limits ("Interactive reply buttons messages", "Interactive list
messages"): 1-3 buttons with unique titles of at most 20 characters under a
body of at most 1024; otherwise a list of at most 10 rows (titles <= 24);
otherwise the offers are written as text. Checked as built and as sent to
the fake Cloud API, which refuses what Meta refuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.channels.whatsapp.buttons import BODY, as_text, interactive
from bridge.channels.whatsapp.send import Outgoing
from bridge.types.messages import Action
from tests.fakes.fake_whatsapp import FakeWhatsApp, check_message
from tests.whatsapp.conftest import ALICE, running, wa_settings

TWO = (Action("Keep as memory", "/yes k3f9"), Action("Keep as steering", "/yes k3f9 steering"))
FIVE = tuple(Action(f"Model {n}", f"/model m{n}") for n in range(5))
LONG = (Action("Keep it as a standing", "/yes abcd"),)  # 21: over a button, a row fits
ELEVEN = tuple(Action(f"Option {n}", f"/pick {n}") for n in range(11))


def sendable(obj: dict[str, object]) -> str:
    return check_message({"to": ALICE, "type": "interactive", "interactive": obj})


def test_up_to_three_short_offers_are_reply_buttons() -> None:
    obj = interactive(TWO, "Keep it?")
    assert obj is not None and obj["type"] == "button" and sendable(obj) == ""
    ids = [b["reply"]["id"] for b in obj["action"]["buttons"]]  # type: ignore[index]
    assert ids == ["/yes k3f9", "/yes k3f9 steering"]


@pytest.mark.parametrize("actions", [FIVE, LONG])
def test_more_offers_or_a_long_label_make_a_list(actions: tuple[Action, ...]) -> None:
    obj = interactive(actions, "Pick one")
    assert obj is not None and obj["type"] == "list" and sendable(obj) == ""


@pytest.mark.parametrize(
    ("actions", "body"),
    [
        (ELEVEN, "Pick one"),
        ((Action("x" * 25, "/a"),), "b"),
        ((Action("Same", "/a"), Action("Same", "/b")), "b"),
        (TWO, "x" * (BODY + 1)),
        (TWO, "   "),
    ],
)
def test_what_fits_neither_is_none(actions: tuple[Action, ...], body: str) -> None:
    assert interactive(actions, body) is None


def test_offers_as_text_name_their_commands() -> None:
    assert as_text(TWO) == "/yes k3f9 — Keep as memory\n/yes k3f9 steering — Keep as steering"


@pytest.mark.parametrize(
    ("text", "actions", "types"),
    [
        ("Short answer.", TWO, ["interactive"]),
        ("x " * 800, TWO, ["text", "interactive"]),  # too long for a body: the offers follow
        ("Answer.", ELEVEN, ["text"]),  # written into the text
    ],
)
async def test_offers_as_sent(
    home: Path, fake: FakeWhatsApp, text: str, actions: tuple[Action, ...], types: list[str]
) -> None:
    async with running(wa_settings(home, fake), fake) as r:
        await Outgoing(r.channel.client).answer(ALICE, text, actions)
    assert [m["type"] for m in fake.sent] == types
    if types == ["text"]:
        assert fake.sent[0]["text"]["body"].endswith("/pick 10 — Option 10")
