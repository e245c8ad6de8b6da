"""Matrix's declaration (`PLATFORM`): what shared code knows of the channel.

A person is their Matrix user id (`@alice:example.org`); `[tenants.X]
matrix_ids = ["@alice:example.org"]`. A direct room's chat is the person's
user id (one conversation, whichever direct room they write in; `roost send
--to matrix:@alice:example.org` goes to the direct room they last wrote in);
in an allowed group room each person has a conversation of their own, the
chat `<room id>|<user id>`. A message is the server's event id. Matrix has
no hard text limit (an event is at most 64 KiB of JSON, formatted body
included), so replies are split at 8,000 characters (and smaller where the
formatted body would make an edit pass the event limit). See
`bridge.types.platform`.
"""

from __future__ import annotations

import re

from bridge.types.platform import Abilities, Platform

# the user id grammar (localpart: the historical characters too), server name with port
USER_ID = re.compile(r"@[\x21-\x39\x3b-\x7e]{1,255}:[A-Za-z0-9.\-]{1,255}(:[0-9]{1,5})?")
# "!opaque:server", or since room version 12 "!" and the create event's hash
ROOM_ID = re.compile(r"![\x21-\x7b\x7d\x7e]{1,255}")
EVENT_ID = re.compile(r"\$[A-Za-z0-9+/=_\-.:]{1,255}")
SEP = "|"  # a group chat: "<room id>|<user id>" (neither may hold a "|")
MAX_CHARS = 8_000


def normalize(value: object) -> str | None:
    """A configured user id -> as Matrix writes it; None when it is not one."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text if USER_ID.fullmatch(text) else None


def group_chat(room_id: str, user_id: str) -> str:
    return f"{room_id}{SEP}{user_id}"


def person_of(chat: str) -> str | None:
    """The user id a chat belongs to: the chat itself (direct) or its second half (group)."""
    user = chat.rpartition(SEP)[2]
    return user if USER_ID.fullmatch(user) else None


PLATFORM = Platform(
    name="matrix",
    title="Matrix",
    style=(
        "The person reads in a Matrix client (Element or similar): Markdown is shown "
        "formatted (bold, italics, lists, links, `code`, fenced code blocks, tables, quotes); "
        "keep answers readable on a phone."
    ),
    identity=USER_ID,
    msg_id=EVENT_ID,
    ids_key="matrix_ids",
    address="matrix:@user:server",
    parse_address=normalize,
    identity_of_chat=person_of,
    normalize_id=normalize,
    max_chars=MAX_CHARS,
    download_bytes=100 * 1024 * 1024,
    abilities=Abilities(voice=True, files=True, buttons=False, edits=True),
)
