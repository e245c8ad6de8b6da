"""The one-line hint of a reply's actions on a text-only channel (`actions_hint`)."""

from __future__ import annotations

from bridge.types.messages import Action, actions_hint

KEEP = Action("Keep as memory", "/yes k3f9")
MORE = Action("More commands", "/help all", in_place=True)


def test_each_action_is_offered_as_a_reply() -> None:
    assert actions_hint((KEEP,)) == "(reply /yes k3f9 to keep as memory)"
    assert actions_hint(()) == ""


def test_an_action_the_reply_names_already_is_left_out() -> None:
    text = "… /help all lists every command."
    assert actions_hint((MORE,), text) == ""
    assert actions_hint((KEEP, MORE), text) == "(reply /yes k3f9 to keep as memory)"
