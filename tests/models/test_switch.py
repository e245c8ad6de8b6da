"""/model through the real core: two OpenAI-compatible servers, one model per chat.

The default model ([llm]) and `smart` ([models.smart]) are two fake OpenAI
servers speaking the real protocol; which server answers shows which model a
chat uses. A switch is per tenant, channel and chat; /status names the chat's
model; /model never shows a server address or key.
"""

from __future__ import annotations

from tests.fakes.fake_openai import FakeOpenAI
from tests.models.conftest import ALICE, BOB, KEY_A, KEY_B, Make, models_toml, telegram, web


def models_asked(fake: FakeOpenAI) -> list[str]:
    return [str(body["model"]) for body in fake.requests]


async def test_model_lists_the_choices_without_addresses_or_keys(
    make: Make, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    roost = await make(models_toml(first, second))
    shown = (await web(roost).say("/model")).text
    assert "This chat uses default" in shown
    assert "• default — openai model=small-1" in shown
    assert "  smart — openai model=big-2" in shown
    for secret in (first.base_url, second.base_url, "127.0.0.1", KEY_A, KEY_B):
        assert secret not in shown


async def test_switching_a_chat_sends_its_turns_to_the_other_model(
    make: Make, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    roost = await make(models_toml(first, second))
    chat = web(roost)
    assert (await chat.say("before")).text == "echo: before"
    switched = await chat.say("/model smart")
    assert "This chat now uses smart (openai model=big-2)" in switched.text
    assert (await chat.say("after")).text == "echo: after"
    assert models_asked(first) == ["small-1"] and models_asked(second) == ["big-2"]
    assert "Model: openai model=big-2 (named smart)" in (await chat.say("/status")).text
    back = await chat.say("/model default")
    assert "now uses default" in back.text
    await chat.say("again")
    assert models_asked(first) == ["small-1", "small-1"] and len(second.requests) == 1
    assert "• default" in (await chat.say("/model")).text


async def test_the_history_goes_with_the_chat_to_the_new_model(
    make: Make, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    roost = await make(models_toml(first, second))
    chat = web(roost)
    await chat.say("my name is Ada")
    await chat.say("/model smart")
    await chat.say("what is my name?")
    contents = [m["content"] for m in second.requests[0]["messages"]]
    assert "my name is Ada" in contents and "echo: my name is Ada" in contents


async def test_a_switch_stays_in_its_chat_and_its_tenant(
    make: Make, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    roost = await make(models_toml(first, second))
    await web(roost, "c1").say("/model smart")
    await web(roost, "c2").say("in another chat")
    await telegram(roost, ALICE).say("alice on telegram")
    await telegram(roost, BOB).say("/model smart")
    await telegram(roost, ALICE).say("alice again")
    await web(roost, "c1").say("the switched chat")
    await telegram(roost, BOB).say("bob's switched chat")
    asked_first = [b["messages"][-1]["content"] for b in first.requests]
    asked_second = [b["messages"][-1]["content"] for b in second.requests]
    assert asked_first == ["in another chat", "alice on telegram", "alice again"]
    assert asked_second == ["the switched chat", "bob's switched chat"]
    # the same chat name under another tenant is another chat
    assert "This chat uses default" in (await telegram(roost, ALICE).say("/model")).text
    assert "This chat uses smart" in (await telegram(roost, BOB).say("/model")).text


async def test_an_unknown_name_lists_the_models_and_changes_nothing(
    make: Make, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    roost = await make(models_toml(first, second))
    chat = web(roost)
    reply = (await chat.say("/model gpt-5")).text
    assert "There is no model 'gpt-5'" in reply and "smart — openai model=big-2" in reply
    await chat.say("hello")
    assert len(first.requests) == 1 and not second.requests


async def test_a_switch_is_audited_with_the_names_only(
    make: Make, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    roost = await make(models_toml(first, second))
    await web(roost).say("/model smart")
    await web(roost).say("/model default")
    events = roost.audit.events  # type: ignore[attr-defined]
    sets = [(t, d) for e, t, d in events if e == "chat.model_set"]
    assert sets == [
        ("local", {"model": "smart", "previous": "default", "channel": "web", "chat": "c1"}),
        ("local", {"model": "default", "previous": "smart", "channel": "web", "chat": "c1"}),
    ]


async def test_the_default_model_can_be_named(make: Make, first: FakeOpenAI) -> None:
    roost = await make(models_toml(first, None).replace("[llm]\n", '[llm]\nname = "local"\n'))
    chat = web(roost)
    listed = (await chat.say("/model")).text
    assert "• local — openai model=small-1" in listed
    assert "Only one model is configured" in listed and "[models.<name>]" in listed
    assert "Model: openai model=small-1 (named local)" in (await chat.say("/status")).text
