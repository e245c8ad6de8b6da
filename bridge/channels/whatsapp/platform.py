"""WhatsApp's declaration (`PLATFORM`): what shared code knows of the channel.

A person is their WhatsApp id (`wa_id`: the phone number in international
form, digits only); `[tenants.X] whatsapp_ids = ["4915112345678"]` may be
written with "+", spaces or dashes. A chat is the person's wa_id (a
WhatsApp group's messages are left out, `payload`): `roost send --to
whatsapp:<phone>`. A text message holds 4096 characters; the Cloud API
takes media up to 100 MB (documents), which `[limits] attachment_bytes`
caps further. See `bridge.types.platform`.
"""

from __future__ import annotations

import re

from bridge.types.platform import Abilities, Platform

WA_ID = re.compile(r"[0-9]{6,20}")
_SEPARATORS = re.compile(r"[\s().-]")


def normalize(value: object) -> str | None:
    """A phone number as configured -> its wa_id (digits); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str):
        return None
    digits = _SEPARATORS.sub("", value.strip()).removeprefix("+")
    return digits if WA_ID.fullmatch(digits) else None


PLATFORM = Platform(
    name="whatsapp",
    title="WhatsApp",
    style=(
        "The person reads on WhatsApp, on a phone: keep answers short; use plain Markdown "
        "(bold, italics, strikethrough, lists, `code`, fenced code blocks); no tables, "
        "no headings, no HTML."
    ),
    identity=WA_ID,
    ids_key="whatsapp_ids",
    address="whatsapp:<phone>",
    parse_address=normalize,
    identity_of_chat=lambda chat: chat,
    normalize_id=normalize,
    max_chars=4096,
    download_bytes=100 * 1024 * 1024,
    abilities=Abilities(voice=True, files=True, buttons=True, edits=False),
)
