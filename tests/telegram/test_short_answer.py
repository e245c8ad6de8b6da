"""What a person sees around an answer: nothing extra for a fast one, typing and a
draft with a Stop button for a slow one, Stop itself, and the in-place "More commands".

"Later" is a `ManualTimer` the test fires: no test here waits for a time.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, GROUP, NO_DRAFTS, running, tg_settings
from tests.telegram.fake_bot_api import BOT_USERNAME, FakeBotAPI
from tests.telegram.timers import Gate, ManualTimer
from tests.waits import until

STOP = [("⏹ Stop", "/stop")]
STRANGER = 999999


def sends(fake: FakeBotAPI) -> list[str]:
    return [c.params["text"] for c in fake.calls_of("sendMessage")]


async def test_a_fast_answer_is_one_send_message(home: Path, fake: FakeBotAPI) -> None:
    timer = ManualTimer()  # never fired: the answer is faster than any delay
    options = replace(NO_DRAFTS, timer=timer)
    async with running(tg_settings(home, fake), fake, ScriptedBackend("pong"), options) as run:
        for n in range(3):
            fake.push_text(ALICE, f"ping {n}")
            await run.idle()
    assert sends(fake) == ["pong", "ok", "ok"]
    # each answer's typing delay and first-draft delay were cancelled, nothing left waiting
    assert timer.cancelled == 6 and timer.waiting == 0
    assert fake.calls_of("sendChatAction") == []  # no typing indicator
    assert fake.calls_of("editMessageText") == [] and fake.calls_of("deleteMessage") == []
    assert fake.calls_of("editMessageReplyMarkup") == []


async def test_a_slow_answer_shows_typing_then_a_draft_with_stop(
    home: Path, fake: FakeBotAPI
) -> None:
    timer = ManualTimer()
    gate = Gate("The first half", ", and the rest.")
    async with running(tg_settings(home, fake), fake, gate, replace(NO_DRAFTS, timer=timer)) as run:
        fake.push_text(ALICE, "tell me")
        await gate.reached.wait()
        await until(lambda: timer.waiting >= 2, "typing and the draft wait for the delay")
        assert fake.calls_of("sendChatAction") == [] and sends(fake) == []
        timer.fire()
        await fake.wait_call("sendChatAction")
        await until(lambda: fake.keyboard(ALICE) == STOP, "the draft with its Stop button")
        (draft,) = fake.sent_to(ALICE)
        assert draft.text.startswith("The first half")
        await until(lambda: timer.waiting >= 2, "typing and the draft wait again")
        timer.fire()  # the indicator is renewed while the model works
        await fake.wait_call("sendChatAction", count=2)
        gate.open()
        await run.idle()
        await until(lambda: fake.sent_to(ALICE)[0].text == "The first half, and the rest.")
    (final,) = fake.sent_to(ALICE)  # the draft became the answer: no second message
    assert final.reply_markup is None  # the Stop button is gone
    assert len(fake.calls_of("sendMessage")) == 1


async def test_the_stop_button_stops_the_answer_and_keeps_it_marked_once(
    home: Path, fake: FakeBotAPI
) -> None:
    timer = ManualTimer()
    gate = Gate("A long story begins")  # never opened: only Stop ends it
    settings = tg_settings(home, fake)
    async with running(settings, fake, gate, replace(NO_DRAFTS, timer=timer)) as run:
        fake.push_text(ALICE, "tell me a story")
        await gate.reached.wait()
        await until(lambda: timer.waiting >= 2, "the draft waits for the delay")
        timer.fire()
        await until(lambda: fake.keyboard(ALICE) == STOP, "the draft with its Stop button")
        (draft,) = fake.sent_to(ALICE)
        fake.push_callback(ALICE, "/stop", draft.message_id)
        await run.idle()
        await until(lambda: "[stopped]" in fake.sent_to(ALICE)[0].text, "the stopped answer")
        (shown,) = fake.sent_to(ALICE)  # no "Nothing to stop", no second message
        assert shown.text == "A long story begins … [stopped]"
        assert shown.text.count("[stopped]") == 1 and shown.reply_markup is None
        assert fake.answered, "the press is answered (the button stops spinning)"
        fake.push_text(ALICE, "and now?")  # the chat is free at once
        await run.idle()
        await until(lambda: len(fake.sent_to(ALICE)) == 2, "the next answer")
        assert fake.sent_to(ALICE)[1].text == "answer 2"
        failed = [e for e in run.audit.events if e[0] == "message.failed"]
        assert [e[2].get("kind") for e in failed] == ["stopped"]


async def test_a_typed_stop_ends_the_running_answer(home: Path, fake: FakeBotAPI) -> None:
    timer = ManualTimer()  # never fired: no draft was shown yet
    gate = Gate("Thinking hard")
    async with running(tg_settings(home, fake), fake, gate, replace(NO_DRAFTS, timer=timer)) as run:
        fake.push_text(ALICE, "a hard question")
        await gate.reached.wait()
        fake.push_text(ALICE, "/stop")
        await run.idle()
        await until(lambda: len(fake.sent_to(ALICE)) == 1, "the stopped answer")
        assert [m.text for m in fake.sent_to(ALICE)] == ["Thinking hard … [stopped]"]
        fake.push_text(ALICE, "/stop")  # nothing runs now
        await run.idle()
        await until(lambda: len(fake.sent_to(ALICE)) == 2, "the reply to /stop")
        assert fake.sent_to(ALICE)[1].text.startswith("Nothing to stop")


async def test_more_commands_shows_the_full_list_in_the_help_message(
    home: Path, fake: FakeBotAPI
) -> None:
    async with running(tg_settings(home, fake), fake) as run:
        fake.push_text(ALICE, "/help")
        await run.idle()
        (short,) = fake.sent_to(ALICE)
        assert "/reset" in short.text and "/whoami" not in short.text
        assert fake.keyboard(ALICE) == [("More commands", "=/help all")]
        fake.push_callback(ALICE, "=/help all", short.message_id)
        await run.idle()
        await until(lambda: "/whoami" in fake.sent_to(ALICE)[0].text, "the full list")
        (full,) = fake.sent_to(ALICE)  # edited in place: no second message
        assert full.message_id == short.message_id and full.text.startswith("Commands:")
        assert full.reply_markup is None and fake.answered


async def test_in_a_group_a_press_never_rewrites_a_members_message(
    home: Path, fake: FakeBotAPI
) -> None:
    """A stranger pressing "More commands" under alice's /help in an allowed group once
    turned her message into "Sorry, I don't know you"; a press there now answers as a
    new message, and alice's stays as it was."""
    settings = tg_settings(home, fake, allowed_groups=[GROUP])
    async with running(settings, fake) as run:
        fake.push_text(ALICE, f"/help@{BOT_USERNAME}", chat_id=GROUP, chat_type="supergroup")
        await run.idle()
        (short,) = fake.sent_to(GROUP)
        assert fake.keyboard(GROUP) == [("More commands", "=/help all")]
        fake.push_callback(
            STRANGER, "=/help all", short.message_id, chat_id=GROUP, chat_type="supergroup"
        )
        await run.idle()
        fake.push_callback(
            ALICE, "=/help all", short.message_id, chat_id=GROUP, chat_type="supergroup"
        )
        await run.idle()
        await until(lambda: any("/whoami" in m.text for m in fake.sent_to(GROUP)), "the list")
        assert fake.sent_to(GROUP)[0].text == short.text  # alice's help, unchanged
        assert fake.calls_of("editMessageText") == []
        assert fake.sent_to(GROUP)[-1].text.startswith("Commands:")
