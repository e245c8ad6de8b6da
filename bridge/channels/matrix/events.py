"""A `/sync` answer as the few things the channel acts on (pure).

`read(sync, me)` walks `rooms.join` (timeline events, the room's
`summary` and whether its members may have changed), `rooms.invite`
(invites, with the inviter and whether the invite says `is_direct` or the
room is encrypted, from `invite_state`) and `rooms.leave` (rooms the bot
left or was kicked from). Of the timeline it keeps the people's
`m.room.message` events (not the bot's own, not edits of earlier messages,
not notices: bots talk with notices and must not answer each other) and
`m.room.encrypted` ones (which roost cannot read: the channel tells a known
person so in the room, and gives a stranger only the stranger flow). A
message's media (`m.image`, `m.file`, `m.audio`, `m.video`) keeps its
mxc:// URI and the size and type the sender declared;
`org.matrix.msc3245.voice` marks a voice message. Whether a message
mentions the bot (`m.mentions.user_ids`, the user id in the body, or a
matrix.to link to it in the formatted body) is read here; `without_mention`
drops the mention from the text. Anything malformed is skipped and counted.

Members: `members` is a room's joined plus invited count where the sync's
`summary` told it (an invited person joins when they like, and with the
usual `shared` history reads what was said before); `changed` holds the
rooms whose timeline holds an `m.room.member` event or is `limited` (a gap
that may hide one): a count known from before is stale there unless the
summary tells the new one.

Who else may read: `access` holds, per joined room, the values of its
`m.room.history_visibility` and `m.room.join_rules` state events the sync
told (its `state` section, then its timeline: the last one counts); an
invite says whether its `invite_state` already shows them. `private(...)`
is the one rule: a room of two is private only when its history is not
`world_readable` (any value but `shared`, `invited` or `joined` fails) and
only people invited can get in: join rule `invite` or `knock` (a knock must
still be accepted by a member, like an invite); `public`, `restricted` and
`knock_restricted` (anyone in another room joins unasked) fail, and so
does any other value. A missing event is the spec's default (`shared`,
`invite`), which the channel only assumes when the server says so.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

MEDIA = frozenset({"m.image", "m.file", "m.audio", "m.video"})
TEXT = frozenset({"m.text", "m.emote"})
KNOWN = frozenset({"m.location", "m.sticker", "m.key.verification.request", "m.server_notice"})
VOICE_KEYS = ("org.matrix.msc3245.voice", "org.matrix.msc1767.audio")
HISTORY, JOIN_RULE = "m.room.history_visibility", "m.room.join_rules"
ACCESS_KEYS = {HISTORY: "history_visibility", JOIN_RULE: "join_rule"}  # state type -> key
# the room state that stops clients (Element) asking the homeserver for link previews
PREVIEWS = "org.matrix.room.preview_urls"
PRIVATE_HISTORY = frozenset({"shared", "invited", "joined"})
PRIVATE_JOIN = frozenset({"invite", "knock"})
Access = dict[str, str]  # state type (HISTORY, JOIN_RULE) -> its value, where known


@dataclass(frozen=True, slots=True)
class Media:
    mxc: str
    mime: str
    size: int  # as the sender declared it (0: not declared)
    name: str
    voice: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    room_id: str
    sender: str
    event_id: str
    msgtype: str
    text: str | None  # None: a file without a caption
    media: Media | None = None
    mentions_me: bool = False
    encrypted: bool = False  # an m.room.encrypted event: unreadable here


@dataclass(frozen=True, slots=True)
class Invite:
    room_id: str
    inviter: str
    direct: bool
    encrypted: bool
    access: Access = field(default_factory=dict)  # what `invite_state` showed of it


@dataclass
class Batch:
    next_batch: str
    messages: list[Message] = field(default_factory=list)
    invites: list[Invite] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    members: dict[str, int] = field(default_factory=dict)  # room -> joined + invited, if told
    changed: set[str] = field(default_factory=set)  # rooms whose members may have changed
    access: dict[str, Access] = field(default_factory=dict)  # room -> what the sync told
    # rooms where someone else set the link-preview state (`PREVIEWS`): checked again
    previews: set[str] = field(default_factory=set)
    skipped: Counter[str] = field(default_factory=Counter)


def read(sync: dict[str, Any], me: str) -> Batch | None:
    """The batch; None when the answer has no `next_batch` (not a sync answer)."""
    token = sync.get("next_batch")
    if not isinstance(token, str) or not token:
        return None
    batch = Batch(token)
    rooms = _dict(sync.get("rooms"))
    for room_id, room in _dict(rooms.get("join")).items():
        room = _dict(room)
        summary = _dict(room.get("summary"))
        joined, invited = (
            summary.get("m.joined_member_count"),
            summary.get("m.invited_member_count", 0),
        )
        if isinstance(joined, int):
            batch.members[room_id] = joined + (invited if isinstance(invited, int) else 1)
        timeline = _dict(room.get("timeline"))
        if timeline.get("limited") is True:
            batch.changed.add(room_id)
        told: Access = {}
        for event in _list(_dict(room.get("state")).get("events")):
            _access(_dict(event), told)
        for event in _list(timeline.get("events")):
            _access(_dict(event), told)
        if told:
            batch.access[room_id] = told
        for event in _list(_dict(room.get("state")).get("events")) + _list(timeline.get("events")):
            event = _dict(event)
            if event.get("type") == PREVIEWS and event.get("sender") != me:
                batch.previews.add(room_id)
        for event in _list(timeline.get("events")):
            if _dict(event).get("type") == "m.room.member":
                batch.changed.add(room_id)
            message = _message(room_id, _dict(event), me, batch.skipped)
            if message is not None:
                batch.messages.append(message)
    for room_id, room in _dict(rooms.get("invite")).items():
        invite = _invite(room_id, _dict(room), me)
        if invite is None:
            batch.skipped["invite"] += 1
        else:
            batch.invites.append(invite)
    batch.left.extend(str(r) for r in _dict(rooms.get("leave")))
    return batch


def _message(room_id: str, event: dict[str, Any], me: str, skipped: Counter[str]) -> Message | None:
    kind, sender, event_id = event.get("type"), event.get("sender"), event.get("event_id")
    if not isinstance(sender, str) or not isinstance(event_id, str) or sender == me:
        return None
    content = _dict(event.get("content"))
    if kind == "m.room.encrypted":
        return Message(room_id, sender, event_id, "", None, encrypted=True)
    if kind != "m.room.message":
        return None
    msgtype = content.get("msgtype")
    relates = _dict(content.get("m.relates_to"))
    if relates.get("rel_type") == "m.replace" or msgtype == "m.notice":
        return None
    body = content.get("body")
    if msgtype in TEXT and isinstance(body, str):
        mentions = _mentions(content, me)
        return Message(room_id, sender, event_id, str(msgtype), body, mentions_me=mentions)
    if msgtype in MEDIA:
        media = _media(content, str(msgtype))
        if media is None:
            skipped["media"] += 1
            return None
        caption = _caption(content, media.name)
        return Message(
            room_id, sender, event_id, str(msgtype), caption, media, _mentions(content, me)
        )
    skipped[msgtype if msgtype in KNOWN else "other"] += 1  # bounded: a metric label
    return None


def _media(content: dict[str, Any], msgtype: str) -> Media | None:
    url = content.get("url")
    if not isinstance(url, str) or not url.startswith("mxc://"):
        return None  # an encrypted file (content.file) or a broken event
    info = _dict(content.get("info"))
    size = info.get("size")
    mime = info.get("mimetype")
    name = content.get("filename") or content.get("body") or ""
    voice = msgtype == "m.audio" and any(k in content for k in VOICE_KEYS)
    return Media(
        url,
        mime if isinstance(mime, str) else "",
        size if isinstance(size, int) and size >= 0 else 0,
        name if isinstance(name, str) else "",
        voice,
    )


def _caption(content: dict[str, Any], name: str) -> str | None:
    """A file's caption: `body` when `filename` is set and differs (the spec's rule)."""
    body, filename = content.get("body"), content.get("filename")
    if isinstance(filename, str) and isinstance(body, str) and body and body != filename:
        return body
    return None


def private(access: Access) -> bool:
    """Whether a room with these (complete) access values is private (see above)."""
    return access.get(HISTORY) in PRIVATE_HISTORY and access.get(JOIN_RULE) in PRIVATE_JOIN


def exposed(access: Access) -> bool:
    """Whether what is known already shows the room is not private (partial is enough)."""
    return (HISTORY in access and access[HISTORY] not in PRIVATE_HISTORY) or (
        JOIN_RULE in access and access[JOIN_RULE] not in PRIVATE_JOIN
    )


def access_value(kind: str, content: object) -> str:
    """A history visibility or join rule event's value ("" when malformed: not private)."""
    value = _dict(content).get(ACCESS_KEYS[kind])
    return value if isinstance(value, str) else ""


def _access(event: dict[str, Any], told: Access) -> None:
    kind = event.get("type")
    if isinstance(kind, str) and kind in ACCESS_KEYS and event.get("state_key") == "":
        told[kind] = access_value(kind, event.get("content"))


def _invite(room_id: str, room: dict[str, Any], me: str) -> Invite | None:
    inviter, direct, encrypted = "", False, False
    shown: Access = {}
    for event in _list(_dict(room.get("invite_state")).get("events")):
        event = _dict(event)
        _access(event, shown)
        kind = event.get("type")
        if kind == "m.room.encryption":
            encrypted = True
        elif kind == "m.room.member" and event.get("state_key") == me:
            content = _dict(event.get("content"))
            if content.get("membership") == "invite":
                inviter = str(event.get("sender") or "")
                direct = content.get("is_direct") is True
    return Invite(room_id, inviter, direct, encrypted, shown) if inviter else None


def _mentions(content: dict[str, Any], me: str) -> bool:
    users = _dict(content.get("m.mentions")).get("user_ids")
    if isinstance(users, list) and me in users:
        return True
    body = content.get("body")
    if isinstance(body, str) and me in body:
        return True
    formatted = content.get("formatted_body")
    return isinstance(formatted, str) and f"matrix.to/#/{me}" in unquote(formatted)


def without_mention(text: str, me: str) -> str:
    """The text without the bot's user id or a leading "name:" addressing it."""
    localpart = me[1:].split(":", 1)[0]
    cleaned = text.replace(me, " ")
    cleaned = re.sub(rf"^\s*@?{re.escape(localpart)}\s*[:,]\s*", "", cleaned, flags=re.IGNORECASE)
    return re.sub(r"[ \t]{2,}", " ", cleaned).strip()


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
