"""Who may talk to roost on Telegram: configured users, strangers, pairing."""

from __future__ import annotations

from pathlib import Path

from bridge.core.config import Settings, load_settings
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, TOKEN, running, tg_settings
from tests.telegram.fake_bot_api import BOT_USERNAME, FakeBotAPI

STRANGER = 999001


def with_bob(home: Path, fake: FakeBotAPI) -> Settings:
    """Alice by id; bob configured with no ids (people reach him by pairing)."""
    return load_settings(
        home=home,
        telegram={"token": TOKEN, "api_base_url": fake.base_url},
        tenants={"alice": {"telegram_ids": [ALICE]}, "bob": {}},
    )


async def test_allowed_user_gets_the_answer(home: Path, fake: FakeBotAPI) -> None:
    backend = ScriptedBackend("Hello **Alice**, nice to *meet* you.")
    async with running(tg_settings(home, fake), fake, backend) as run:
        assert fake.calls_of("deleteWebhook"), "polling mode clears any webhook first"
        names = [c["command"] for c in fake.commands]
        assert {"help", "start"} <= set(names)
        fake.push_text(ALICE, "hello")
        call = await fake.wait_call("sendMessage")
        assert int(call.params["chat_id"]) == ALICE
        assert call.params["text"] == "Hello Alice, nice to meet you."
        assert "parse_mode" not in call.params
        kinds = {(e["type"], e["offset"], e["length"]) for e in call.params["entities"]}
        assert kinds == {("bold", 6, 5), ("italic", 21, 4)}
        # the typing indicator, only for a slow answer: tests/telegram/test_short_answer.py
        assert backend.requests[0].messages[-1].content == "hello"
        assert run.roost.sessions is not None


async def test_start_greets_and_lists_commands(home: Path, fake: FakeBotAPI) -> None:
    async with running(tg_settings(home, fake), fake):
        fake.push_text(ALICE, "/start")
        call = await fake.wait_call("sendMessage")
        text = call.params["text"]
        assert text.startswith("Hi user111111! I'm roost")
        assert "/help — " in text and "/start — " not in text
        assert "/whoami" not in text and len(text) < 1000, "the most used commands only"
        more = [("More commands", "=/help all")]
        await fake.wait_until(lambda: fake.keyboard(ALICE) == more)


async def test_stranger_is_refused_once_and_never_reaches_the_model(
    home: Path, fake: FakeBotAPI
) -> None:
    backend = ScriptedBackend("only for alice")
    async with running(tg_settings(home, fake), fake, backend) as run:
        for text in ("hi", "hello?", "/help"):
            fake.push_text(STRANGER, text)
        fake.push_text(ALICE, "ping")
        await run.idle()
        refusals = fake.sent_to(STRANGER)
        assert len(refusals) == 1
        assert "/pair CODE" in refusals[0].text and str(STRANGER) in refusals[0].text
        assert len(backend.requests) == 1
        assert backend.requests[0].messages[-1].content == "ping"
        refused = [e for e in run.audit.events if e[0] == "access.refused"]
        assert refused == [
            ("access.refused", None, {"channel": "telegram", "identity": "999001", "suppressed": 0})
        ]
    # the memory is in SQLite: a restarted roost does not refuse again
    async with running(tg_settings(home, fake), fake, backend) as run:
        fake.push_text(STRANGER, "still there?")
        fake.push_text(ALICE, "ping 2")
        await run.idle()
        assert len(fake.sent_to(ALICE)) == 2 and len(fake.sent_to(STRANGER)) == 1


async def test_non_text_and_edits_are_handled_deliberately(home: Path, fake: FakeBotAPI) -> None:
    backend = ScriptedBackend("answer")
    async with running(tg_settings(home, fake), fake, backend):
        photo = fake.message(
            ALICE,
            None,
            extra={"photo": [{"file_id": "f1", "file_unique_id": "u1", "width": 10, "height": 10}]},
        )
        fake.push({"message": photo})
        fake.push({"edited_message": {**fake.message(ALICE, "edited"), "edit_date": 1}})
        post = fake.message(ALICE, "post", chat_id=-100777, chat_type="channel")
        fake.push({"channel_post": post})
        fake.push_text(ALICE, "real question")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 2)
        texts = [m.text for m in fake.sent_to(ALICE)]
        assert texts[0].startswith("I can read text, photos, documents")
        assert texts[1] == "answer"
        assert [r.messages[-1].content for r in backend.requests] == ["real question"]


async def test_pairing_right_code_binds_the_user(home: Path, fake: FakeBotAPI) -> None:
    backend = ScriptedBackend("welcome aboard")
    async with running(with_bob(home, fake), fake, backend) as run:
        code = await run.pairing.issue("bob")
        fake.push_text(STRANGER, "/pair WRONG234")
        await fake.wait_until(lambda: len(fake.sent_to(STRANGER)) == 1)
        assert "not valid" in fake.sent_to(STRANGER)[0].text
        assert "4 more attempts" in fake.sent_to(STRANGER)[0].text
        fake.push_text(STRANGER, f"/pair {code.lower()[:4]}-{code.lower()[4:]}")
        await fake.wait_until(lambda: len(fake.sent_to(STRANGER)) == 2)
        assert "you now talk to roost as bob" in fake.sent_to(STRANGER)[1].text
        fake.push_text(STRANGER, "/whoami")
        await fake.wait_until(lambda: len(fake.sent_to(STRANGER)) == 3)
        assert "bob" in fake.sent_to(STRANGER)[2].text
        fake.push_text(STRANGER, "hello")
        await fake.wait_until(lambda: len(fake.sent_to(STRANGER)) == 4)
        assert fake.sent_to(STRANGER)[3].text == "welcome aboard"
        # the code is single-use
        fake.push_text(STRANGER + 1, f"/pair {code}")
        await fake.wait_until(lambda: len(fake.sent_to(STRANGER + 1)) == 1)
        assert "not valid" in fake.sent_to(STRANGER + 1)[0].text
        events = [(e[0], e[1]) for e in run.audit.events if e[0].startswith("pairing.")]
        assert events == [
            ("pairing.failed", None),
            ("pairing.used", "bob"),
            ("pairing.failed", None),
        ]
        assert all(code not in repr(e) for e in run.audit.events)


async def test_pairing_locks_out_after_five_wrong_codes(home: Path, fake: FakeBotAPI) -> None:
    async with running(tg_settings(home, fake), fake) as run:
        code = await run.pairing.issue("bob")
        for n in range(5):
            fake.push_text(STRANGER, f"/pair BADC0DE{n}")
            await fake.wait_until(lambda n=n: len(fake.sent_to(STRANGER)) == n + 1)
        replies = [m.text for m in fake.sent_to(STRANGER)]
        assert "1 more attempt before" in replies[3]
        assert "locked for this account for an hour" in replies[4]
        fake.push_text(STRANGER, f"/pair {code}")  # the right code, but locked: not checked
        await run.idle()
        assert len(fake.sent_to(STRANGER)) == 5
        assert await run.pairing.bound_tenant("telegram", str(STRANGER)) is None


async def test_pair_in_a_group_is_refused(home: Path, fake: FakeBotAPI) -> None:
    from tests.telegram.conftest import GROUP

    settings = tg_settings(home, fake, allowed_groups=[GROUP])
    async with running(settings, fake) as run:
        code = await run.pairing.issue("bob")
        fake.push_text(
            STRANGER, f"/pair@{BOT_USERNAME} {code}", chat_id=GROUP, chat_type="supergroup"
        )
        await fake.wait_until(lambda: bool(fake.sent_to(GROUP)))
        assert "private chat" in fake.sent_to(GROUP)[0].text
        assert await run.pairing.bound_tenant("telegram", str(STRANGER)) is None
