"""Telegram's declaration (`PLATFORM`): what shared code knows of the channel.

Identities are numeric user ids (`[tenants.X] telegram_ids = [111111]`); a
chat is the user's id (private) or "<group>:<user>"; `roost send --to
telegram:<chat_id>` posts to a chat id (a group's is negative). Messages
hold 4096 characters; a bot may fetch files up to 20 MB. See
`bridge.types.platform`.
"""

from __future__ import annotations

import re

from bridge.types.platform import Abilities, Platform

_CHAT = re.compile(r"-?[0-9]{1,20}")


def _normalize(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip().isdecimal():
        return str(int(value.strip()))
    return None


def _address(rest: str) -> str | None:
    return str(int(rest)) if _CHAT.fullmatch(rest) else None


PLATFORM = Platform(
    name="telegram",
    title="Telegram",
    style=(
        "The person reads on Telegram, often on a phone: keep answers short, use plain "
        "Markdown (bold, italics, `code`, fenced code blocks, lists); no tables, no HTML."
    ),
    identity=re.compile(r"[0-9]{1,20}"),
    msg_id=re.compile(r"[0-9]{1,20}"),
    ids_key="telegram_ids",
    address="telegram:<chat_id>",
    parse_address=_address,
    identity_of_chat=lambda chat: chat if chat.isdecimal() else None,
    normalize_id=_normalize,
    max_chars=4096,
    download_bytes=20_000_000,
    abilities=Abilities(voice=True, files=True, buttons=True, edits=True),
)
