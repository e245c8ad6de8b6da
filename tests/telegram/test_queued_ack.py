"""A message sent while an answer runs is acknowledged at once with a 👀 reaction
(no extra message), taken back when its own answer starts; a failed reaction
never costs the answer. The model is a `Gate`: nothing here waits for a time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bridge.core.sessions import SessionKey
from tests.telegram.conftest import ALICE, NO_DRAFTS, running, tg_settings
from tests.telegram.fake_bot_api import Failure, FakeBotAPI
from tests.telegram.timers import Gate, ManualTimer
from tests.waits import until


def sends(fake: FakeBotAPI) -> list[str]:
    return [c.params["text"] for c in fake.calls_of("sendMessage")]


async def test_messages_waiting_behind_an_answer_get_a_reaction_not_a_message(
    home: Path, fake: FakeBotAPI
) -> None:
    gate = Gate("Working on it")
    options = replace(NO_DRAFTS, timer=ManualTimer())  # no typing, no drafts: only the answers
    async with running(tg_settings(home, fake), fake, gate, options) as run:
        fake.push_text(ALICE, "a long question", message_id=7001)
        await gate.reached.wait()
        ids = [7002, 7003]
        try:  # the gate opens also when this fails: the roost can stop
            for n, mid in enumerate(ids, 2):
                fake.push_text(ALICE, f"and then {n}", message_id=mid)
            await fake.wait_until(lambda: all(fake.reaction(ALICE, m) == ["👀"] for m in ids))
            assert fake.reaction(ALICE, 7001) == []  # it is being answered
            assert sends(fake) == []  # acknowledged without a message
        finally:
            gate.open()
        await run.idle()
        await until(lambda: len(sends(fake)) == 3, "the three answers")
    assert sends(fake) == ["Working on it", "answer 2", "answer 3"]
    assert all(fake.reaction(ALICE, m) == [] for m in ids), "taken back when its answer started"
    calls = fake.calls_of("setMessageReaction")
    assert len(calls) == 4 and all(c.params.get("is_big") in (None, False) for c in calls)


async def test_a_message_sent_while_the_answer_ahead_is_delivered_gets_no_reaction(
    home: Path, fake: FakeBotAPI
) -> None:
    """The answer ahead is shown (its `sendMessage` took effect) but its send has not
    returned: the chat's lock is still held for it, yet the follow-up is next the moment
    it returns, so no 👀 is set (only to be taken back at once)."""
    gate = Gate("Here it is")
    gate.open()
    options = replace(NO_DRAFTS, timer=ManualTimer())
    key = SessionKey("alice", "telegram", str(ALICE))
    fake.stall("sendMessage")  # shown at once; its answer waits for release()
    async with running(tg_settings(home, fake), fake, gate, options) as run:
        try:
            fake.push_text(ALICE, "a question", message_id=7001)
            await fake.wait_until(lambda: sends(fake) == ["Here it is"])
            fake.push_text(ALICE, "thanks, and then?", message_id=7002)
            await until(lambda: run.roost.core.locks.users(key) == 2, "the follow-up queued")
        finally:
            fake.release()
        await run.idle()
        await until(lambda: len(sends(fake)) == 2, "both answers")
    assert sends(fake) == ["Here it is", "answer 2"]
    assert fake.calls_of("setMessageReaction") == []


async def test_a_failed_reaction_never_costs_the_answer(home: Path, fake: FakeBotAPI) -> None:
    gate = Gate("Working on it")
    fake.fail("setMessageReaction", Failure(400, "Bad Request: REACTION_INVALID"))
    options = replace(NO_DRAFTS, timer=ManualTimer())
    async with running(tg_settings(home, fake), fake, gate, options) as run:
        fake.push_text(ALICE, "a long question")
        await gate.reached.wait()
        try:
            fake.push_text(ALICE, "and then?")
            await fake.wait_call("setMessageReaction")
        finally:
            gate.open()
        await run.idle()
        await until(lambda: len(sends(fake)) == 2, "both answers")
    assert sends(fake) == ["Working on it", "answer 2"]
    assert len(fake.calls_of("setMessageReaction")) == 1  # nothing set: nothing to take back


async def test_a_message_alone_in_its_chat_gets_no_reaction(home: Path, fake: FakeBotAPI) -> None:
    gate = Gate("Working on it")
    options = replace(NO_DRAFTS, timer=ManualTimer())
    async with running(tg_settings(home, fake), fake, gate, options) as run:
        fake.push_text(ALICE, "a long question")
        await gate.reached.wait()
        fake.push_text(ALICE + 1, "someone else's chat")  # another chat never waits
        gate.open()
        await run.idle()
    assert fake.calls_of("setMessageReaction") == []


async def test_the_fake_refuses_what_telegram_refuses(fake: FakeBotAPI) -> None:
    """Reactions only on a person's message, one emoji of the published list."""
    from telegram import Bot
    from telegram.error import BadRequest

    from tests.telegram.conftest import TOKEN

    mid = 7001
    fake.push_text(ALICE, "hi", message_id=mid)
    async with Bot(TOKEN, base_url=fake.base_url) as bot:
        for chat, msg, reaction in [
            (ALICE, mid + 1, ["👀"]),  # no such message
            (ALICE, mid, ["1️⃣"]),  # not a reaction emoji
            (ALICE, mid, ["👀", "👍"]),  # a bot sets one at most
        ]:
            try:
                await bot.set_message_reaction(chat, msg, reaction=reaction)
            except BadRequest:
                continue
            raise AssertionError(f"accepted {reaction} on {msg}")
        assert await bot.set_message_reaction(ALICE, mid, reaction="👀")
        assert fake.reaction(ALICE, mid) == ["👀"]
        assert await bot.set_message_reaction(ALICE, mid, reaction=[])
        assert fake.reaction(ALICE, mid) == []
