"""Meta's webhook JSON read into roost's own types (`payload.parse`), including bad input.

Bodies come from `tests/fakes/whatsapp_payloads.py` (Meta's documented
shapes) and from Meta's own example in the "messages webhook reference",
copied field by field below. Unknown types are counted, never errors;
fields Meta may add later are ignored; a value for another business number
is left out.
"""

from __future__ import annotations

import json

import pytest

from bridge.channels.whatsapp.payload import Media, parse
from tests.fakes import whatsapp_payloads as hooks

PNID = "106540352242922"
WA = "16505551234"

META_WAMID = "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="
META_EXAMPLE = {  # "messages webhook reference", a text message sent to a business
    "object": "whatsapp_business_account",
    "entry": [
        {
            "id": "102290129340398",
            "changes": [
                {
                    "value": {
                        "messaging_product": "whatsapp",
                        "metadata": {
                            "display_phone_number": "15550783881",
                            "phone_number_id": "106540352242922",
                        },
                        "contacts": [{"profile": {"name": "Sheena Nelson"}, "wa_id": WA}],
                        "messages": [
                            {
                                "from": WA,
                                "id": META_WAMID,
                                "timestamp": "1749416383",
                                "type": "text",
                                "text": {"body": "Does it come in another color?"},
                            }
                        ],
                    },
                    "field": "messages",
                }
            ],
        }
    ],
}


def raw(body: object) -> bytes:
    return json.dumps(body).encode()


def test_metas_own_example() -> None:
    delivery = parse(raw(META_EXAMPLE), PNID)
    assert delivery is not None
    (msg,) = delivery.messages
    assert (msg.sender, msg.name, msg.kind, msg.text) == (
        WA,
        "Sheena Nelson",
        "text",
        "Does it come in another color?",
    )
    assert msg.timestamp == 1749416383 and msg.wamid.startswith("wamid.")
    assert not delivery.ignored


def test_media_messages_carry_their_reference() -> None:
    _, body = hooks.image(PNID, WA, "1037543291543636", "ab" * 32, caption="my desk")
    (img,) = parse(raw(body), PNID).messages  # type: ignore[union-attr]
    assert img.text == "my desk"
    assert img.media == Media("1037543291543636", "image/jpeg", "ab" * 32, "", False)
    _, body = hooks.audio(PNID, WA, "42", "cd" * 32)
    (voice,) = parse(raw(body), PNID).messages  # type: ignore[union-attr]
    assert voice.text is None and voice.media is not None and voice.media.voice
    assert voice.media.mime == "audio/ogg; codecs=opus"
    _, body = hooks.document(PNID, WA, "7", "ef" * 32, "plan.pdf", "application/pdf")
    (doc,) = parse(raw(body), PNID).messages  # type: ignore[union-attr]
    assert doc.media is not None and doc.media.filename == "plan.pdf"


def test_a_button_or_list_press_is_its_id() -> None:
    _, body = hooks.button_reply(PNID, WA, "/yes k3f9", "Keep it", "wamid.X")
    (press,) = parse(raw(body), PNID).messages  # type: ignore[union-attr]
    assert (press.kind, press.text) == ("interactive", "/yes k3f9")
    _, body = hooks.list_reply(PNID, WA, "/model fast", "fast", "wamid.X")
    (row,) = parse(raw(body), PNID).messages  # type: ignore[union-attr]
    assert row.text == "/model fast"


def test_statuses_with_and_without_errors() -> None:
    sent = parse(raw(hooks.status(PNID, "wamid.A", WA, "sent")), PNID)
    failed = parse(raw(hooks.status(PNID, "wamid.B", WA, "failed", 131047)), PNID)
    assert sent is not None and failed is not None
    assert [(s.wamid, s.status, s.error) for s in sent.statuses] == [("wamid.A", "sent", None)]
    assert [(s.status, s.error) for s in failed.statuses] == [("failed", 131047)]


def test_unknown_types_and_other_numbers_are_counted_not_read() -> None:
    _, reaction = hooks.reaction(PNID, WA, "wamid.X")
    _, odd = hooks.unsupported(PNID, WA)
    _, future = hooks.message(PNID, WA, "hologram", {"shape": "cube"})
    _, other = hooks.text("999999999", WA, "for another number")
    ignored = {}
    for body in (reaction, odd, future, other):
        delivery = parse(raw(body), PNID)
        assert delivery is not None and delivery.messages == ()
        ignored.update(delivery.ignored or {})
    assert ignored == {"reaction": 1, "unsupported": 1, "hologram": 1, "other_number": 1}


def test_a_sticker_comes_without_text_for_the_core_to_answer() -> None:
    _, body = hooks.message(PNID, WA, "sticker", {"mime_type": "image/webp", "id": "1"})
    (msg,) = parse(raw(body), PNID).messages  # type: ignore[union-attr]
    assert (msg.kind, msg.text, msg.media) == ("sticker", None, None)


def test_fields_meta_adds_later_are_ignored() -> None:
    body = json.loads(json.dumps(META_EXAMPLE))
    value = body["entry"][0]["changes"][0]["value"]
    value["messages"][0]["brand_new"] = {"x": 1}
    value["something"] = [1, 2]
    body["entry"][0]["changes"][0]["value"]["contacts"][0]["user_id"] = "US.13491208655302741918"
    delivery = parse(raw(body), PNID)
    assert delivery is not None and len(delivery.messages) == 1


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"[]",
        b"null",
        b'{"entry": []}',
        b'{"object": "page", "entry": []}',
        b'{"object": "whatsapp_business_account", "entry": "no"}',
        b'{"object": "whatsapp_business_account", "entry": [{"changes": [{"value": []}]}]}',
        b"\xff\xfe not utf-8",
        b'{"object": "whatsapp_business_account", "entry": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
    ],
)
def test_what_is_not_a_webhook_is_none(body: bytes) -> None:
    assert parse(body, PNID) is None


def test_a_sender_that_is_not_a_wa_id_is_left_out() -> None:
    _, body = hooks.text(PNID, "not-a-number", "hi")
    delivery = parse(raw(body), PNID)
    assert delivery is not None and delivery.messages == ()
    assert delivery.ignored == {"text": 1}
