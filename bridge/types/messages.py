"""The message types every channel and the core share.

A channel turns platform input into an `Inbound`, hands it to the core and
sends back what the core yields: `Delta` pieces while a model answer grows
and exactly one `Final` at the end. Nothing platform-specific passes this
line. A `Final` may carry files (`OutFile`: a path under the tenant's
directories, the name to show, a MIME type); each channel hands them over
its own way (Telegram: a document; web: a short-lived download link;
terminal: the path). A `Final` may also offer one-tap `actions`: buttons whose
press sends `Action.command` as the person's next message (Telegram: an
inline keyboard; web: buttons; terminal: a "(reply /yes k3f9 to ...)" hint,
`actions_hint`). Every text of an `Inbound` is valid Unicode once the core
took it (`valid_inbound`: a lone surrogate, U+D800-U+DFFF, as a JSON `\\ud800`
escape makes one, becomes U+FFFD; no database could store it). This module
imports nothing from the project.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, fields, replace
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

AttachmentKind = Literal["voice", "audio", "photo", "document"]
_T = TypeVar("_T", "Inbound", "Attachment")


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file that came with a message, already saved by the channel under the
    tenant's `TenantDirs.inbox` under a generated name (never the platform's
    file name as a path). `name` is the sender's file name, for display only."""

    kind: AttachmentKind
    path: str  # absolute, under the tenant's inbox
    mime: str
    name: str = ""
    size: int = 0  # bytes
    duration_s: float = 0.0  # voice and audio
    width: int = 0  # photos, as the platform said
    height: int = 0


@dataclass(frozen=True, slots=True)
class Inbound:
    """One message from a person, as a channel received it."""

    channel: str  # "web" | "cli" | "telegram" | ...
    identity: str  # the platform's user id, as text ("local" for loopback)
    chat: str  # the platform's chat id, as text
    text: str
    msg_id: str  # unique per message within (channel, chat)
    is_private: bool = True  # a one-to-one chat (not a group)
    display_name: str = ""
    has_text: bool = True  # False: a photo, sticker, ... (the core says "text only")
    bot_name: str = ""  # the channel's own bot account; `/cmd@other` is not for us
    scheduled: bool = False  # sent by the scheduler for the person: not a reaction to a reply
    quoted: str = ""  # the text of the message this one replies to ('' when none)
    attachments: tuple[Attachment, ...] = ()  # files sent with the message (bridge/senses)


def valid_unicode(text: str) -> str:
    """`text` with each lone surrogate (U+D800-U+DFFF: no valid Unicode, refused by
    UTF-8 and so by every database) replaced by U+FFFD; a well-formed pair that is
    still split in two code points becomes its one character. `text` itself when
    it holds none (the usual case: one pass in C)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def _valid_texts(item: _T) -> _T:
    """`item` (an `Inbound` or an `Attachment`) with `valid_unicode` applied to each of its
    text fields; `item` itself when none changed."""
    changed: dict[str, Any] = {}
    for f in fields(item):
        value = getattr(item, f.name)
        if isinstance(value, str):
            valid = valid_unicode(value)
            if valid is not value:
                changed[f.name] = valid
    return replace(item, **changed) if changed else item


_INBOUND_TEXTS = attrgetter(*(f.name for f in fields(Inbound) if f.type in ("str", str)))


def valid_inbound(inbound: Inbound) -> Inbound:
    """`inbound` with every text it carries valid Unicode (`valid_unicode`): the text,
    the quote, the names, ids and each attachment's name, path and type. The core's
    first step with a message (`bridge.core.router`): a channel need not know. A
    message without attachments whose texts joined encode (a lone surrogate in any of
    them fails it: joining makes no code point and takes none away) is itself, told
    by one encode in C (the usual case; else each field is looked at as before)."""
    if not inbound.attachments:
        try:
            "".join(_INBOUND_TEXTS(inbound)).encode("utf-8")
        except (TypeError, UnicodeEncodeError):  # not a str (a channel's bug), or invalid
            pass
        else:
            return inbound
    attachments = tuple(_valid_texts(a) for a in inbound.attachments)
    if any(a is not b for a, b in zip(attachments, inbound.attachments, strict=True)):
        inbound = replace(inbound, attachments=attachments)
    return _valid_texts(inbound)


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of an answer that is still growing."""

    text: str


FinalKind = Literal["answer", "command", "refusal", "error", "silent", "stopped"]
"""`silent`: the core decided nothing is sent back (a stranger already told,
a command for another bot, a locked-out pairing attempt); its text is empty.
`stopped`: the person stopped the answer; the text is what was shown, marked."""


@dataclass(frozen=True, slots=True)
class OutFile:
    """A file a reply hands the person. `path` lies under the tenant's own directories
    (channels check it again before they send); `name` is what the person sees."""

    path: Path
    name: str
    mime: str = "application/octet-stream"


@dataclass(frozen=True, slots=True)
class Action:
    """A one-tap reply: pressing `label` sends `command` as the person's next message."""

    label: str  # short, shown on the button ("Keep as memory")
    command: str  # a slash command, at most 64 bytes of UTF-8 (Telegram's callback data)
    in_place: bool = False  # its reply replaces the message the button is on, where it can


def actions_hint(actions: tuple[Action, ...], text: str = "") -> str:
    """The actions as one line for a text-only channel; '' when there are none. An action
    whose command `text` (the reply) names already is left out (/help's "/help all")."""
    actions = tuple(a for a in actions if a.command not in text)
    if not actions:
        return ""
    ways = [f"{a.command} to {a.label[:1].lower()}{a.label[1:]}" for a in actions]
    return "(reply " + ", or ".join(ways) + ")"


@dataclass(frozen=True, slots=True)
class Final:
    """The complete reply; always the last thing the core yields."""

    text: str
    kind: FinalKind = "answer"
    files: tuple[OutFile, ...] = ()
    actions: tuple[Action, ...] = ()  # one-tap replies offered with this reply
    # a command that did not run as asked (unknown, its usage shown, not allowed from a
    # job): `roost send` exits 1 on it, as on an error; what is shown does not change
    failed: bool = False
    # an answer the session did not store (the offline backend's, or one the disk refused):
    # the web page gives it no place among the stored turns (nothing to edit or ask again)
    unstored: bool = False


Outbound = Delta | Final


DeltaSink = Callable[[str], Awaitable[None]]
"""Awaited with each new piece of a growing answer."""

Handle = Callable[[Inbound, DeltaSink | None], Awaitable[Final]]
"""What a request/response channel (web, terminal) calls: the core's `handle`."""


class Reply(Protocol):
    """How a push channel (Telegram) takes one message's answer from the core."""

    def working(self) -> AbstractAsyncContextManager[object]:
        """Entered while the core works on an admitted message (a typing indicator)."""
        ...

    async def delta(self, piece: str) -> None:
        """A new piece of a growing answer."""

    async def send(self, final: Final) -> None:
        """Deliver the reply; never called for a `silent` one. Awaited while the
        chat's lock is held, so the replies of one chat go out in order."""


@runtime_checkable
class Queued(Protocol):
    """A reply that can acknowledge at once a message that waits behind its chat's
    running answer (Telegram: a reaction on the person's message)."""

    def queued(self, ahead: int) -> None:
        """Told (without waiting) when the message joins its chat's queue: `ahead`
        answers or commands hold or wait for the chat before it. Never raises."""


Answer = Callable[[Inbound, Reply], Awaitable[Final]]
"""What a push channel calls for each message: the core's `answer`."""
