"""Webhook bodies exactly as Meta's WhatsApp Cloud API sends them (pure builders).

Shapes checked against Meta's "messages webhook reference" (developers.facebook.com,
WhatsApp Business Platform, webhooks/reference/messages: incoming text, image,
audio, document, interactive; `statuses` with `conversation`/`pricing` and
`errors`), the public example payloads quoted there ("Sheena Nelson",
phone_number_id 106540352242922, `wamid.HBgL…` ids), and Meta's
"Interactive reply buttons messages" page (a press arrives as
`interactive.button_reply {id, title}`). Envelope:

    {"object": "whatsapp_business_account",
     "entry": [{"id": <WABA id>, "changes": [{"field": "messages",
       "value": {"messaging_product": "whatsapp",
                 "metadata": {"display_phone_number", "phone_number_id"},
                 "contacts": [{"profile": {"name"}, "wa_id"}],
                 "messages": [{"from", "id", "timestamp", "type", <type>: {...}}]}}]}]}

Timestamps are strings of epoch seconds, as Meta sends them; a wamid is
"wamid." + base64 of bytes that spell the sender's number (as Meta's do).
"""

from __future__ import annotations

import base64
import secrets
import time
from typing import Any

WABA_ID = "102290129340398"
DISPLAY_NUMBER = "15550783881"


def wamid(wa_id: str) -> str:
    raw = (
        b"\x15\x02\x00\x12\x18"
        + wa_id.encode()
        + b"\x15\x02\x00\x12\x18\x14"
        + secrets.token_hex(10).upper().encode()
    )
    return "wamid." + base64.b64encode(raw).decode()


def envelope(phone_number_id: str, value: dict[str, Any]) -> dict[str, Any]:
    body = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": DISPLAY_NUMBER, "phone_number_id": phone_number_id},
        **value,
    }
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": WABA_ID, "changes": [{"value": body, "field": "messages"}]}],
    }


def message(
    phone_number_id: str,
    wa_id: str,
    kind: str,
    content: dict[str, Any] | None,
    *,
    name: str = "Sheena Nelson",
    msg_id: str | None = None,
    at: float | None = None,
    context: dict[str, str] | None = None,
) -> tuple[str, dict[str, Any]]:
    """(wamid, webhook body) of one incoming message of `kind` with its object."""
    mid = msg_id or wamid(wa_id)
    msg: dict[str, Any] = {
        "from": wa_id,
        "id": mid,
        "timestamp": str(int(at or time.time())),
        "type": kind,
    }
    if content is not None:
        msg[kind] = content
    if context is not None:
        msg["context"] = context
    value = {"contacts": [{"profile": {"name": name}, "wa_id": wa_id}], "messages": [msg]}
    return mid, envelope(phone_number_id, value)


def text(pnid: str, wa_id: str, body: str, **kw: Any) -> tuple[str, dict[str, Any]]:
    return message(pnid, wa_id, "text", {"body": body}, **kw)


def image(
    pnid: str, wa_id: str, media_id: str, sha: str, caption: str | None = None, **kw: Any
) -> tuple[str, dict[str, Any]]:
    content = {"mime_type": "image/jpeg", "sha256": sha, "id": media_id}
    if caption is not None:
        content["caption"] = caption
    return message(pnid, wa_id, "image", content, **kw)


def audio(
    pnid: str, wa_id: str, media_id: str, sha: str, voice: bool = True, **kw: Any
) -> tuple[str, dict[str, Any]]:
    content = {"mime_type": "audio/ogg; codecs=opus", "sha256": sha, "id": media_id, "voice": voice}
    return message(pnid, wa_id, "audio", content, **kw)


def document(
    pnid: str,
    wa_id: str,
    media_id: str,
    sha: str,
    filename: str,
    mime: str,
    caption: str | None = None,
    **kw: Any,
) -> tuple[str, dict[str, Any]]:
    content = {"filename": filename, "mime_type": mime, "sha256": sha, "id": media_id}
    if caption is not None:
        content["caption"] = caption
    return message(pnid, wa_id, "document", content, **kw)


def button_reply(
    pnid: str, wa_id: str, button_id: str, title: str, replied_to: str, **kw: Any
) -> tuple[str, dict[str, Any]]:
    content = {"type": "button_reply", "button_reply": {"id": button_id, "title": title}}
    return message(
        pnid,
        wa_id,
        "interactive",
        content,
        context={"from": DISPLAY_NUMBER, "id": replied_to},
        **kw,
    )


def list_reply(
    pnid: str, wa_id: str, row_id: str, title: str, replied_to: str, **kw: Any
) -> tuple[str, dict[str, Any]]:
    content = {
        "type": "list_reply",
        "list_reply": {"id": row_id, "title": title, "description": ""},
    }
    return message(
        pnid,
        wa_id,
        "interactive",
        content,
        context={"from": DISPLAY_NUMBER, "id": replied_to},
        **kw,
    )


def reaction(
    pnid: str, wa_id: str, to_msg: str, emoji: str = "👍", **kw: Any
) -> tuple[str, dict[str, Any]]:
    return message(pnid, wa_id, "reaction", {"message_id": to_msg, "emoji": emoji}, **kw)


def unsupported(pnid: str, wa_id: str, **kw: Any) -> tuple[str, dict[str, Any]]:
    """What Meta sends for a message type the Cloud API does not support."""
    mid, body = message(pnid, wa_id, "unsupported", None, **kw)
    msg = body["entry"][0]["changes"][0]["value"]["messages"][0]
    msg["errors"] = [
        {
            "code": 131051,
            "title": "Message type unknown",
            "message": "Message type unknown",
            "error_data": {"details": "Message type is currently not supported."},
        }
    ]
    return mid, body


def status(
    pnid: str,
    msg_id: str,
    recipient: str,
    state: str,
    error: int | None = None,
    at: float | None = None,
) -> dict[str, Any]:
    """A `statuses` webhook (sent, delivered, read, failed) for a message the business sent."""
    item: dict[str, Any] = {
        "id": msg_id,
        "status": state,
        "timestamp": str(int(at or time.time())),
        "recipient_id": recipient,
    }
    if state in ("sent", "delivered"):
        item["conversation"] = {"id": secrets.token_hex(16), "origin": {"type": "service"}}
        item["pricing"] = {"billable": True, "pricing_model": "CBP", "category": "service"}
    if state == "failed" and error is not None:
        titles = {131047: "Re-engagement message", 131026: "Message undeliverable"}
        title = titles.get(error, "Message failed to send")
        item["errors"] = [
            {
                "code": error,
                "title": title,
                "message": title,
                "error_data": {"details": title},
                "href": "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
            }
        ]
    return envelope(pnid, {"statuses": [item]})
