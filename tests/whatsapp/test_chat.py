"""A WhatsApp conversation through the real row, the real client and the fake Cloud API.

Known people (`[tenants.alice] whatsapp_ids`) get answers as Cloud API text
messages, after a read receipt with the typing indicator; strangers get one
refusal and then silence, with bounded audit records; `/pair CODE` works as
on Telegram; a duplicate or retried webhook is answered once; one-tap
offers become reply buttons and a press runs the offer's command; 429 and
5xx are retried; an answer that cannot be delivered waits in the outbox;
kinds roost does not read are counted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bridge.types.backend import BackendError
from tests.conftest import ScriptedBackend
from tests.fakes import whatsapp_payloads as hooks
from tests.fakes.fake_whatsapp import Failure, FakeWhatsApp
from tests.whatsapp.conftest import ALICE, STRANGER, running, wa_settings

BOB = "447700900123"


async def test_a_known_person_is_answered_in_whatsapp_formatting(
    home: Path, fake: FakeWhatsApp
) -> None:
    backend = ScriptedBackend("Hello **Alice**, here is `code`.")
    async with running(wa_settings(home, fake), fake, backend) as r:
        wamid = await fake.text(ALICE, "hi there", name="Alice")
        await r.channel.idle()
    (sent,) = fake.sent
    assert sent == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": ALICE,
        "type": "text",
        "text": {"preview_url": False, "body": "Hello *Alice*, here is `code`."},
    }
    (read,) = fake.reads
    assert read["message_id"] == wamid and read["typing_indicator"] == {"type": "text"}
    assert [m.content for m in backend.requests[0].messages if m.role == "user"][-1] == "hi there"
    (received,) = r.events("message.received")
    assert received["channel"] == "whatsapp" and received["msg_id"] != wamid
    assert ALICE not in received["msg_id"], "roost's message id spells no number"


async def test_a_stranger_is_refused_once_then_silence(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend()
    async with running(wa_settings(home, fake), fake, backend) as r:
        for n in range(6):
            await fake.text(STRANGER, f"hello {n}")
        await r.channel.idle()
        refused = r.events("access.refused")
    (refusal,) = fake.texts()
    assert "I don't know you" in refusal and f"WhatsApp user id is {STRANGER}" in refusal
    assert backend.requests == [] and fake.reads == []
    assert refused == [{"channel": "whatsapp", "identity": STRANGER, "suppressed": 0}]


async def test_pairing_binds_a_whatsapp_number_to_a_tenant(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend("Hi Bob, paired.")
    async with running(wa_settings(home, fake, tenants={"bob": {}}), fake, backend) as r:
        await fake.text(BOB, "hi")
        await r.channel.idle()
        code = await r.roost.pairing.issue("bob")
        await fake.text(BOB, f"/pair {code}")
        await fake.text(BOB, "hello again")
        await r.channel.idle()
        bound = await r.roost.pairing.bound_tenant("whatsapp", BOB)
    refusal, paired, answer = fake.texts(BOB)
    assert "/pair CODE" in refusal
    assert "*bob*" in paired, paired  # "you now talk to roost as **bob**", in WhatsApp's bold
    assert answer == "Hi Bob, paired." and bound == "bob"


async def test_a_duplicate_delivery_is_answered_once(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend("once", "twice?")
    async with running(wa_settings(home, fake), fake, backend) as r:
        _, body = hooks.text(fake.phone_number_id, ALICE, "ping")
        statuses = await asyncio.gather(*(fake.deliver(body) for _ in range(5)))
        await fake.deliver(body)  # and Meta's later retry
        await r.channel.idle()
        assert r.channel.duplicates == 5
    assert statuses == [200] * 5
    assert fake.texts() == ["once"] and len(backend.requests) == 1


async def test_one_chat_is_answered_in_order(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend(*(f"answer {n}" for n in range(8)), delay=0.001)
    async with running(wa_settings(home, fake), fake, backend) as r:
        for n in range(8):
            await fake.text(ALICE, f"question {n}")
        await r.channel.idle()
    assert fake.texts() == [f"answer {n}" for n in range(8)]


async def test_a_long_answer_arrives_in_pieces_in_order(home: Path, fake: FakeWhatsApp) -> None:
    words = [f"w{n}" for n in range(3000)]
    async with running(wa_settings(home, fake), fake, ScriptedBackend(" ".join(words))) as r:
        await fake.text(ALICE, "tell me everything")
        await r.channel.idle()
    texts = fake.texts()
    assert len(texts) == -(-len(" ".join(words)) // 4096) and all(len(t) <= 4096 for t in texts)
    assert " ".join(texts).split() == words


async def test_an_offer_is_reply_buttons_and_a_press_runs_it(
    home: Path, fake: FakeWhatsApp
) -> None:
    backend = ScriptedBackend("Understood.")
    async with running(wa_settings(home, fake), fake, backend) as r:
        await fake.text(ALICE, "From now on, always answer in English.")
        await r.channel.idle()
        (offer,) = [m for m in fake.sent if m["type"] == "interactive"]
        buttons = offer["interactive"]["action"]["buttons"]
        assert [b["reply"]["title"] for b in buttons] == ["Keep as memory", "Keep as steering"]
        assert "Understood." in offer["interactive"]["body"]["text"]
        command = buttons[0]["reply"]["id"]
        assert command.startswith("/yes ")
        await fake.press(ALICE, command, "Keep as memory", replied_to="wamid.offer")
        await r.channel.idle()
        kept = r.events("correction.kept")
    assert len(backend.requests) == 1, "a press is a command: no model asked"
    assert kept and "Kept" in fake.texts()[-1]


async def test_429_and_5xx_are_retried(home: Path, fake: FakeWhatsApp) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend("made it")) as r:
        fake.fail(
            Failure(429, 130429, retry_after=0),  # the read receipt: best effort, not retried
            Failure(429, 130429, retry_after=0),
            Failure(503, 2, "OAuthException", "Service temporarily unavailable"),
            Failure(400, 131056, message="(#131056) pair rate limit hit"),
        )
        await fake.text(ALICE, "hi")
        await r.channel.idle()
    assert fake.texts() == ["made it"]
    assert fake.calls == 5


async def test_an_answer_that_fails_for_good_waits_in_the_outbox(
    home: Path, fake: FakeWhatsApp
) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend("lost?")) as r:
        fake.fail(*(Failure(500, 1, message="An unknown error occurred") for _ in range(5)))
        wamid = await fake.text(ALICE, "hi")
        await r.channel.idle()
        rows = await r.roost.database.fetch_all(
            "SELECT tenant, channel, chat, key, text FROM outbox WHERE key LIKE 'reply:%'"
        )
    from bridge.channels.whatsapp.store import key

    assert fake.sent == []
    assert rows == [("alice", "whatsapp", ALICE, f"reply:{key(wamid)}", "lost?")]


async def test_a_refused_token_is_not_retried(home: Path, fake: FakeWhatsApp) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend("x")) as r:
        fake.token = "rotated"  # the configured one is refused now: 401, code 190
        await fake.text(ALICE, "hi")
        await r.channel.idle()
    assert fake.sent == [] and fake.calls == 2  # the read receipt and one send


async def test_kinds_roost_does_not_read_are_counted_not_answered(
    home: Path, fake: FakeWhatsApp
) -> None:
    backend = ScriptedBackend("never")
    async with running(wa_settings(home, fake), fake, backend) as r:
        pnid = fake.phone_number_id
        for made in (hooks.reaction(pnid, ALICE, "wamid.X"), hooks.unsupported(pnid, ALICE)):
            assert await fake.deliver(made[1]) == 200
        assert await fake.deliver(hooks.text("123456", ALICE, "other number")[1]) == 200
        await r.channel.idle()
        metrics = r.roost.metrics.render()
    assert fake.sent == [] and backend.requests == []
    assert dict(r.channel.ignored) == {"reaction": 1, "unsupported": 1, "other_number": 1}
    line = 'roost_channel_ignored_total{channel="whatsapp",kind="reaction"} 1'
    assert line in metrics


async def test_a_sticker_gets_the_text_only_answer(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend("never")
    async with running(wa_settings(home, fake), fake, backend) as r:
        sticker = {"mime_type": "image/webp", "sha256": "00" * 32, "id": "1", "animated": False}
        await fake.deliver(hooks.message(fake.phone_number_id, ALICE, "sticker", sticker)[1])
        await r.channel.idle()
    assert backend.requests == [] and len(fake.texts()) == 1


async def test_a_model_failure_is_a_short_answer(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend(BackendError("unavailable", "down"))
    async with running(wa_settings(home, fake), fake, backend) as r:
        await fake.text(ALICE, "hi")
        await r.channel.idle()
    assert fake.texts() == ["down"]  # the backend's user_message, as on every channel


async def test_an_answer_that_arrived_without_a_reply_is_not_sent_again(
    home: Path, fake: FakeWhatsApp
) -> None:
    """Meta took the message, then the connection dropped before its answer: sending it
    again (the client's retry, or the outbox later) would show it twice."""
    async with running(wa_settings(home, fake), fake, ScriptedBackend("only once")) as r:
        fake.drop(1)
        await fake.text(ALICE, "hi")
        await r.channel.idle()
        kept = await r.roost.database.fetch_all("SELECT key FROM outbox")
    assert fake.texts() == ["only once"]
    assert fake.calls == 2  # the read receipt and one send
    assert kept == []


async def test_a_long_answer_goes_on_after_a_piece_that_was_not_confirmed(
    home: Path, fake: FakeWhatsApp
) -> None:
    long = "\n\n".join(f"paragraph {i} " + "word " * 300 for i in range(4))
    async with running(wa_settings(home, fake), fake, ScriptedBackend(long)) as r:
        fake.drop(1)
        await fake.text(ALICE, "tell me a lot")
        await r.channel.idle()
    pieces = fake.texts()
    assert len(pieces) > 1 and len(set(pieces)) == len(pieces)  # every piece, none twice
    assert pieces[0].startswith("paragraph 0") and "paragraph 3" in pieces[-1]
