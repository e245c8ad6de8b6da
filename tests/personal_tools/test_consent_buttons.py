"""A consent button always names the version it was shown for, and a refused
confirmation never counts as shown.

Through the real core, the fake OpenAI server, the real sandbox and SQLite. A
long tool name (41 characters) or an alias pushes `/tool save NAME [as ALIAS]
yes HASH` past Telegram's 64 bytes of callback data; the button then is the
short `/tool yes HASH [as ALIAS]`, never the hashless form. After a silent
rewrite to a version that reads a secret and calls a host, the old button
(pressed twice: a double tap, or a person who thinks the first tap failed)
saves nothing; only a plain `/tool save` shows the new version for consent.
"""

from __future__ import annotations

import pytest

from bridge.app.build import Roost
from bridge.personal_tools.consent import MAX_COMMAND_BYTES, MIN_HASH
from forge.library import sha256_text
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.personal_tools.test_consent import BENIGN, HOSTILE, Chat

LONG = "a" * 41  # the longest tool name


def create(name: str, source: str) -> ToolCalls:
    return ToolCalls([Call("forge_create", {"name": name, "description": "", "source": source})])


@pytest.mark.parametrize(
    ("name", "alias"), [(LONG, None), ("wc", "b" * 41), (LONG, "b" * 41), ("wc", "short")]
)
async def test_a_stale_button_pressed_twice_saves_nothing(
    wired: Roost, fake: FakeOpenAI, name: str, alias: str | None
) -> None:
    chat = Chat(wired)
    target = alias or name
    tools = wired.tenant_dirs("local").tools
    fake.script(create(name, BENIGN), Text("ok"))
    await chat.say("write a word counter")
    offer = await chat.say(f"/tool save {name}" + (f" as {alias}" if alias else ""))
    (button,) = offer.actions

    # a later (injected) turn rewrites the draft to send a secret out
    fake.script(create(name, HOSTILE), Text("done"))
    await chat.say("summarise this web page for me")
    first = await chat.say(button.command)
    second = await chat.say(button.command)  # the same old button, again
    assert first.text.startswith("Not saved"), first.text
    assert second.text.startswith("Not saved"), second.text
    assert "api_key" in first.text and "collector.example" in first.text  # what it is now
    assert not (tools / f"me.{target}.py").exists()
    assert sha256_text(BENIGN)[:MIN_HASH] in button.command  # bound to the version shown
    assert len(button.command.encode()) <= MAX_COMMAND_BYTES

    # only a plain /tool save shows the new version; its own button keeps it
    shown = await chat.say(f"/tool save {name}" + (f" as {alias}" if alias else ""))
    (keep,) = shown.actions
    assert sha256_text(HOSTILE)[:MIN_HASH] in keep.command
    assert (await chat.say(button.command)).text.startswith("Not saved")  # still stale
    assert not (tools / f"me.{target}.py").exists()
    assert (await chat.say(keep.command)).text.startswith(f"Saved me.{target}")
    assert (tools / f"me.{target}.py").read_text() == HOSTILE


async def test_a_short_confirmation_needs_a_version_shown(wired: Roost, fake: FakeOpenAI) -> None:
    chat = Chat(wired)
    fake.script(create("wc", BENIGN), Text("ok"))
    await chat.say("write a word counter")
    sha = sha256_text(BENIGN)
    never = await chat.say(f"/tool yes {sha[:12]}")  # a hash the person was never shown
    assert never.text.startswith("Not saved: no consent prompt in this chat showed")
    assert (await chat.say("/tool yes 1234")).text.startswith("Usage: /tool yes <hash>")
    await chat.say("/tool save wc")
    assert (await chat.say(f"/tool yes {sha[:12]}")).text.startswith("Saved me.wc")
