"""The Cloud API's webhook JSON, read into our own frozen types (pydantic at the edge).

Meta's "messages" webhook (developers.facebook.com, WhatsApp Business
Platform, "messages webhook reference"): `{"object":
"whatsapp_business_account", "entry": [{"id", "changes": [{"field":
"messages", "value": {...}}]}]}`; a value carries `messaging_product`,
`metadata {display_phone_number, phone_number_id}`, and `contacts[]
{profile {name}, wa_id}` with `messages[] {from, id, timestamp, type, ...}`,
or `statuses[] {id, status, timestamp, recipient_id, errors[]}`. Fields Meta
adds later are ignored, never an error.

`parse(body, phone_number_id)` gives a `Delivery`: the messages (`Incoming`:
text, an interactive reply's id, a template button's payload, or a media
reference for image, audio, document; a video, sticker, location or contact
card comes without text, so the core tells the person what it reads), the
status updates, and what was left out, counted by kind (`ignored`:
reactions, unsupported, system, order, unknown types, values for another
business number).

Every item is read on its own: a message or status that does not fit
(no sender phone number, as Meta's username rollout may send: only a
`user_id`; a field of the wrong type; a media id too long) is left out and
counted (`invalid_message`, `invalid_status`, `no_phone`: `LEFT_OUT`; the
channel logs each kind once, without content), and the rest of the
delivery is read as usual. A message of a WhatsApp group (`group_id`,
Meta's Groups webhook) is left out too (`group`): roost answers people one
to one, never a group. Lone surrogates (a `\\uD800` escape without its
pair) in any string of the delivery become U+FFFD before anything reads
it, so no text, caption, name or file name taken from WhatsApp is ever
invalid Unicode downstream (storage, the model, recall).
A file name longer than `MAX_FILENAME` is cut.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bridge.channels.whatsapp.platform import WA_ID
from bridge.types.messages import valid_unicode

READ = frozenset({"text", "image", "audio", "document", "interactive", "button"})
UNREADABLE = frozenset({"video", "sticker", "location", "contacts"})
STATUSES = frozenset({"sent", "delivered", "read", "failed"})
MAX_FILENAME = 255
# items of a delivery left out as they are not what roost reads (the channel logs each kind)
LEFT_OUT = frozenset({"group", "no_phone", "invalid_message", "invalid_status", "invalid_contact"})


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


M = TypeVar("M", bound="_Loose")


class _Media(_Loose):
    id: str = Field(min_length=1, max_length=128)
    mime_type: str = Field("", max_length=255)
    sha256: str = Field("", max_length=128)
    caption: str | None = None
    filename: str | None = None
    voice: bool = False

    @field_validator("filename")
    @classmethod
    def _cut(cls, v: str | None) -> str | None:
        return v[:MAX_FILENAME] if v is not None else None


class _Reply(_Loose):
    id: str = Field(max_length=256)
    title: str = ""


class _Interactive(_Loose):
    type: str = ""
    button_reply: _Reply | None = None
    list_reply: _Reply | None = None


class _Button(_Loose):
    payload: str | None = None
    text: str | None = None


class _Text(_Loose):
    body: str = ""


class _Context(_Loose):
    id: str = ""


class _Message(_Loose):
    sender: str = Field(alias="from")
    id: str = Field(min_length=1, max_length=512)
    timestamp: str = "0"
    type: str = ""
    text: _Text | None = None
    image: _Media | None = None
    audio: _Media | None = None
    document: _Media | None = None
    interactive: _Interactive | None = None
    button: _Button | None = None
    context: _Context | None = None


class _Error(_Loose):
    code: int = 0


class _Status(_Loose):
    id: str = Field(min_length=1, max_length=512)
    status: str
    timestamp: str = "0"
    recipient_id: str = ""
    errors: list[_Error] = Field(default_factory=list)


class _Profile(_Loose):
    name: str = ""


class _Contact(_Loose):
    wa_id: str = ""
    profile: _Profile = Field(default_factory=_Profile)


class _Metadata(_Loose):
    phone_number_id: str = ""
    display_phone_number: str = ""


class _Value(_Loose):  # the items are read one by one (`_each`): one bad item is left out
    messaging_product: str = ""
    metadata: _Metadata = Field(default_factory=_Metadata)
    contacts: list[Any] = Field(default_factory=list)
    messages: list[Any] = Field(default_factory=list)
    statuses: list[Any] = Field(default_factory=list)


class _Change(_Loose):
    field: str = ""
    value: _Value = Field(default_factory=_Value)


class _Entry(_Loose):
    id: str = ""
    changes: list[_Change] = Field(default_factory=list)


class _Webhook(_Loose):
    object: str
    entry: list[_Entry] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Media:
    """A file a message refers to (fetched later through GET /{media-id})."""

    id: str
    mime: str
    sha256: str = ""
    filename: str = ""
    voice: bool = False  # an audio message recorded as a voice note


@dataclass(frozen=True, slots=True)
class Incoming:
    """One message from a person."""

    wamid: str
    sender: str  # wa_id
    name: str  # the profile name, display only
    timestamp: int
    kind: str  # Meta's type: text, image, audio, document, interactive, button, video, ...
    text: str | None  # the text, caption, or a button's id; None when there is none
    media: Media | None = None
    replies_to: str = ""  # the wamid this message answers (context.id)


@dataclass(frozen=True, slots=True)
class StatusUpdate:
    wamid: str
    status: str  # sent | delivered | read | failed
    timestamp: int
    recipient: str
    error: int | None = None  # the first error's code on `failed`


@dataclass(frozen=True, slots=True)
class Delivery:
    messages: tuple[Incoming, ...] = ()
    statuses: tuple[StatusUpdate, ...] = ()
    ignored: Counter[str] | None = None  # kind -> how many were left out


def parse(body: bytes, phone_number_id: str) -> Delivery | None:
    """The webhook's messages and statuses for our number; None when it is not one."""
    try:
        raw = json.loads(body)
        if b"\\u" in body:  # only an escape can make a lone surrogate in strict UTF-8
            raw = _without_lone_surrogates(raw)
        hook = _Webhook.model_validate(raw)
    except (ValueError, RecursionError, ValidationError):  # nesting deeper than json reads
        return None
    if hook.object != "whatsapp_business_account":
        return None
    messages: list[Incoming] = []
    statuses: list[StatusUpdate] = []
    ignored: Counter[str] = Counter()
    for entry in hook.entry:
        for change in entry.changes:
            value = change.value
            if change.field != "messages" or value.metadata.phone_number_id != phone_number_id:
                ignored["other_number" if change.field == "messages" else "field"] += 1
                continue
            names = {c.wa_id: c.profile.name for c in _each(_Contact, value.contacts, ignored)}
            for msg in _each(_Message, _people(value.messages, ignored), ignored):
                incoming = _incoming(msg, names.get(msg.sender, ""))
                if incoming is None:
                    ignored[_kind(msg.type)] += 1
                else:
                    messages.append(incoming)
            for status in _each(_Status, value.statuses, ignored):
                if status.status not in STATUSES:
                    ignored["status"] += 1
                    continue
                error = status.errors[0].code if status.errors else None
                statuses.append(
                    StatusUpdate(
                        status.id, status.status, _int(status.timestamp), status.recipient_id, error
                    )
                )
    return Delivery(tuple(messages), tuple(statuses), ignored)


def _people(items: list[Any], ignored: Counter[str]) -> list[Any]:
    """The messages of one person to roost: a group's (`group_id`) and one without a
    phone number (only a `user_id`, Meta's usernames) are counted and left out."""
    kept = []
    for item in items:
        if isinstance(item, dict) and "group_id" in item:
            ignored["group"] += 1  # never answered, never paired from
        elif isinstance(item, dict) and "from" not in item:
            ignored["no_phone"] += 1  # roost answers a wa_id (a phone number)
        else:
            kept.append(item)
    return kept


def _each(model: type[M], items: list[Any], ignored: Counter[str]) -> list[M]:
    """The items that fit `model`; each one that does not is counted and left out."""
    good: list[M] = []
    for item in items:
        try:
            good.append(model.model_validate(item))
        except ValidationError:
            ignored[f"invalid_{model.__name__.strip('_').lower()}"] += 1
    return good


def _without_lone_surrogates(value: Any) -> Any:
    """`value` (parsed JSON) with every lone surrogate in its strings made U+FFFD."""
    if isinstance(value, str):
        return valid_unicode(value)
    root: list[Any] = [value]
    stack: list[list[Any] | dict[str, Any]] = [root]
    while stack:
        node = stack.pop()
        pairs = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        for k, v in pairs:
            if isinstance(v, str):
                v = valid_unicode(v)
            elif isinstance(v, list | dict):
                stack.append(v)
            if isinstance(node, dict) and isinstance(k, str) and valid_unicode(k) is not k:
                del node[k]
                node[valid_unicode(k)] = v
            else:
                node[k] = v  # type: ignore[index]
    return root[0]


def _kind(kind: str) -> str:
    """A type's name for a counter: known names as they are, anything else `other`."""
    return kind if kind.isascii() and kind.isidentifier() and len(kind) <= 32 else "other"


def _int(text: str) -> int:
    return int(text) if text.isdecimal() and len(text) <= 12 else 0


def _incoming(msg: _Message, name: str) -> Incoming | None:
    if not WA_ID.fullmatch(msg.sender):
        return None
    kind = msg.type
    base = Incoming(msg.id, msg.sender, name, _int(msg.timestamp), kind, None)
    replies_to = msg.context.id if msg.context is not None else ""
    if kind == "text" and msg.text is not None:
        return _with(base, text=msg.text.body, replies_to=replies_to)
    if kind == "interactive" and msg.interactive is not None:
        chosen = msg.interactive.button_reply or msg.interactive.list_reply
        return _with(base, text=chosen.id) if chosen is not None else None
    if kind == "button" and msg.button is not None:
        return _with(base, text=msg.button.payload or msg.button.text or "")
    media = {"image": msg.image, "audio": msg.audio, "document": msg.document}.get(kind)
    if media is not None:
        ref = Media(media.id, media.mime_type, media.sha256, media.filename or "", media.voice)
        return _with(base, text=media.caption, media=ref, replies_to=replies_to)
    if kind in UNREADABLE:
        return base  # no text, no media: the core answers that it reads text
    return None


def _with(base: Incoming, **changes: object) -> Incoming:
    return replace(base, **changes)  # type: ignore[arg-type]
