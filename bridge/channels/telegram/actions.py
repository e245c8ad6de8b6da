"""One-tap actions on Telegram: an inline keyboard on a reply, and the presses that come back.

A `Final` with `actions` gets an inline keyboard on the last message of the
reply (`attach`: one button per row, `callback_data` = the action's command,
which must be a slash command of at most 64 bytes, as Telegram requires; an
action that does not fit is left off the keyboard and stays in the text).
When Telegram does not take the keyboard, `attach` says so and the reply
sends `typed(actions)` instead: the commands to type, so no offer is lost.
A press arrives as a `callback_query`: `pressed` answers it at once
(`answerCallbackQuery`, so the button stops spinning) and feeds its data
through the core as if the person had typed it — the same access checks:
the presser's `from.id` resolves to a tenant (or is refused), in a group the
presser's own session is used ("<group>:<user>") and groups that are not
allow-listed are ignored. So another person's press can only confirm what
is pending in that person's own chat, never someone else's offer. The
press's message id is `cb<callback query id>`: the same press stored twice
(the durable inbox, a redelivery) is the same message. An `in_place` action
("more" under /help) carries `=` before its command: in a private chat its answer
replaces the text of the message the button is on instead of arriving as a new
one; in a group, where anyone may press a member's button, it arrives as a new
message (a stranger's press once turned alice's help into a refusal).
`STOP_KEYS` is the Stop button of an answer being written (`/stop`, which
the core runs at once, beside the running turn).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection

from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import ChatType
from telegram.error import TelegramError

from bridge.types.messages import Action, Final, Inbound, Reply

log = logging.getLogger(__name__)
MAX_DATA = 64  # bytes of callback_data Telegram accepts
MAX_LABEL = 64
IN_PLACE = "="  # callback data "=/help all": the answer edits the pressed message


def data_of(action: Action) -> str:
    return IN_PLACE + action.command if action.in_place else action.command


def fits(data: str) -> bool:
    command = data.removeprefix(IN_PLACE)
    return command.startswith("/") and 0 < len(data.encode("utf-8")) <= MAX_DATA


def keyboard(actions: tuple[Action, ...]) -> InlineKeyboardMarkup | None:
    rows = [
        [InlineKeyboardButton(a.label[:MAX_LABEL], callback_data=data_of(a))]
        for a in actions
        if fits(data_of(a))
    ]
    return InlineKeyboardMarkup(rows) if rows else None


STOP_KEYS = keyboard((Action("⏹ Stop", "/stop"),))


async def attach(bot: Bot, chat_id: int, message_id: int, actions: tuple[Action, ...]) -> bool:
    """Put the actions' keyboard on a sent message; False (logged) when Telegram refused."""
    markup = keyboard(actions)
    if markup is None:
        return True
    try:
        await bot.edit_message_reply_markup(chat_id, message_id, reply_markup=markup)
    except TelegramError as exc:
        log.warning("telegram: the reply's buttons were not shown (chat %s): %s", chat_id, exc)
        return False
    return True


def typed(actions: tuple[Action, ...]) -> str:
    """The offers as commands to type, for when the buttons could not be shown."""
    lines = [f"{a.command} ({a.label[:MAX_LABEL]})" for a in actions if fits(data_of(a))]
    return "The buttons could not be shown; type instead:\n" + "\n".join(lines)


def press_inbound(query: CallbackQuery, bot_name: str, groups: Collection[int]) -> Inbound | None:
    """The press as the message it stands for; None when it is not ours to read."""
    data, message, user = query.data, query.message, query.from_user
    if not data or not fits(data) or message is None or user.is_bot:
        return None
    chat = message.chat
    private = chat.type == ChatType.PRIVATE
    if not private and chat.id not in groups:
        return None
    return Inbound(
        "telegram",
        str(user.id),
        str(chat.id) if private else f"{chat.id}:{user.id}",
        data.removeprefix(IN_PLACE),
        f"cb{query.id}",
        is_private=private,
        display_name=user.first_name or "",
        bot_name=bot_name,
    )


async def pressed(
    query: CallbackQuery,
    bot_name: str,
    groups: Collection[int],
    answer: Callable[[Inbound, Reply], Awaitable[Final]],
    reply_to: Callable[[Inbound, int, int | None], Reply],
) -> None:
    """Answer the callback query, then run its command through the core (its
    answer in the pressed message itself for an in-place button)."""
    try:
        await query.answer()
    except TelegramError as exc:
        log.debug("telegram: answerCallbackQuery failed: %s", exc)
    inbound = press_inbound(query, bot_name, groups)
    if inbound is None or query.message is None:
        return
    message = query.message
    # in place only in a private chat: a group's message is one member's answer, and any
    # member (or a stranger) may press its button; there the answer comes as a new message
    placed = inbound.is_private and (query.data or "").startswith(IN_PLACE)
    await answer(
        inbound, reply_to(inbound, message.chat.id, message.message_id if placed else None)
    )
