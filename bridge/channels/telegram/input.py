"""Reading one Telegram message: who speaks, to whom, what it quotes (pure).

Messages that speak for a chat rather than a person (automatic forwards
from a linked channel, the 777000 service account, `sender_chat`) are
recognised; in groups, `addressed` tells whether the bot is spoken to; the
bot's own mention is taken out of the text; `quoted` is what a reply quotes;
`to_answer` picks the message roost answers out of an update;
`chat_of` is roost's chat id of an update ("<chat>" private, "<group>:<user>"
in a group); `message_inbound` is a person's message as an `Inbound`.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Collection

from telegram import Message, Update
from telegram.constants import ChatType

from bridge.types.messages import Attachment, Inbound

log = logging.getLogger("bridge.channels.telegram.channel")
# the "Telegram" service account that posts a linked channel's automatic forwards
SERVICE_SENDER = 777000


def from_a_channel(msg: Message) -> bool:
    """Automatic forwards from a linked channel, and messages sent on behalf of
    a chat (sender_chat: a channel or an anonymous admin) speak for no person."""
    return bool(
        msg.is_automatic_forward
        or msg.sender_chat is not None
        or (msg.from_user is not None and msg.from_user.id == SERVICE_SENDER)
    )


def quoted(msg: Message) -> str:
    """What a reply quotes: the part the person selected (`quote`), else the whole
    replied-to message's text or caption; '' for a message that replies to nothing."""
    if msg.quote is not None and msg.quote.text:
        return msg.quote.text
    replied = msg.reply_to_message
    if replied is None:
        return ""
    return replied.text or replied.caption or ""


def addressed(msg: Message, bot_id: int, username: str) -> bool:
    """In a group: does this message speak to the bot (a reply to it, a mention,
    `/cmd@botname`)?"""
    me = f"@{username}".lower()
    replied = msg.reply_to_message
    if replied is not None and replied.from_user and replied.from_user.id == bot_id:
        return True
    kinds: list[str | None] = ["mention", "text_mention", "bot_command"]
    # a photo's or a document's words are its caption
    found = msg.parse_entities(kinds) if msg.text else msg.parse_caption_entities(kinds)
    for entity, value in found.items():
        if entity.type == "mention" and value.lower() == me:
            return True
        if entity.type == "text_mention" and entity.user and entity.user.id == bot_id:
            return True
        if entity.type == "bot_command" and value.lower().endswith(me):
            return True
    return False


_RUNS = re.compile(r"[ \t]{2,}")


@functools.lru_cache(maxsize=8)
def _mention(username: str) -> re.Pattern[str]:
    """The bot's mention in a text (compiled once per bot name)."""
    return re.compile(rf"(?<![/\w])@{re.escape(username)}\b", re.IGNORECASE)


def without_mention(text: str, username: str) -> str:
    """Drop mentions of the bot ("@roost_bot what's up" -> "what's up"); runs of
    spaces and tabs become one space. A text without "@" holds no mention (the
    pattern's first character), so it is not searched for one."""
    cleaned = _mention(username).sub(" ", text) if "@" in text else text
    return _RUNS.sub(" ", cleaned).strip()


def to_answer(
    update: Update, groups: Collection[int], bot_id: int, username: str
) -> Message | None:
    """The person's message roost answers in this update; None for anything else
    (edits, channel posts, bots, other groups, group talk not meant for the bot)."""
    msg = update.message
    if msg is None:
        kind = "edited message" if update.edited_message else "channel post or other"
        log.debug("telegram: ignoring an update (%s)", kind)
        return None
    user = msg.from_user
    if user is None or user.is_bot or from_a_channel(msg):
        log.debug("telegram: ignoring a message from a bot or a channel")
        return None
    if msg.chat.type != ChatType.PRIVATE and (
        msg.chat.id not in groups or not addressed(msg, bot_id, username)
    ):
        return None
    return msg


def chat_of(update: Update) -> str:
    """roost's chat id of a message or a button press ('' for other updates)."""
    query = update.callback_query
    message = query.message if query is not None else update.message
    user = query.from_user if query is not None else (update.message and update.message.from_user)
    if message is None or user is None:
        return ""
    chat = message.chat
    return str(chat.id) if chat.type == ChatType.PRIVATE else f"{chat.id}:{user.id}"


def message_inbound(
    msg: Message, username: str, attachments: tuple[Attachment, ...] = ()
) -> Inbound:
    """A person's message (msg.from_user set) as roost's `Inbound`."""
    user = msg.from_user
    assert user is not None
    private = msg.chat.type == ChatType.PRIVATE
    text = msg.text if msg.text is not None else msg.caption  # a file's caption
    return Inbound(
        "telegram",
        str(user.id),
        str(msg.chat.id) if private else f"{msg.chat.id}:{user.id}",
        without_mention(text, username) if text is not None else "",
        str(msg.message_id),
        is_private=private,
        display_name=user.first_name or "",
        has_text=text is not None,
        bot_name=username,
        quoted=quoted(msg),
        attachments=attachments,
    )
