"""A message that waits behind its chat's running answer is acknowledged at once.

The core tells a reply `queued(ahead)` when its message joins the chat's
queue; `Ack` then puts a 👀 reaction on the person's message
(`setMessageReaction`, Bot API 7.0) instead of sending a message, so the
per-chat send pace is spent on answers only. When its answer starts the
reaction is removed (an empty reaction list). The position is not shown:
bots may react only with the emoji of Telegram's fixed list, which has no
digits. A reaction that fails (a chat that restricts reactions, a flood
limit, Telegram down) is logged and never fails or delays the answer beyond
`REACT_S`. Button presses carry no message of the person's: no reaction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from telegram import Bot
from telegram.constants import ReactionEmoji

log = logging.getLogger("bridge.channels.telegram.channel")
WAITING = ReactionEmoji.EYES  # 👀: seen, it is next (or later) in line
REACT_S = 10.0  # a reaction call that takes longer is given up


class Ack:
    """The waiting reaction of one person's message."""

    def __init__(self, bot: Bot | None, chat_id: int, msg_id: str) -> None:
        self._bot, self._chat = bot, chat_id
        self._msg = int(msg_id) if msg_id.isdigit() else None
        self._set: asyncio.Future[bool] | None = None

    def queued(self, ahead: int) -> None:
        """The message waits behind `ahead` others: react now, without waiting."""
        if self._bot is None or self._msg is None or self._set is not None:
            return
        self._set = asyncio.ensure_future(self._react([WAITING]))

    def clear(self) -> asyncio.Future[bool] | None:
        """Its answer starts: remove the reaction once it was set (a task; None when
        there was none)."""
        if self._set is None:
            return None
        setting, self._set = self._set, None
        return asyncio.ensure_future(self._unreact(setting))

    def cancel(self) -> None:
        """The answer never starts (roost stopping): a reaction still on its way is given up."""
        if self._set is not None and not self._set.done():
            self._set.cancel()

    async def _unreact(self, setting: asyncio.Future[bool]) -> bool:
        await asyncio.wait({setting})
        if setting.cancelled() or not setting.result():
            return False  # nothing to take back
        return await self._react([])

    async def _react(self, reaction: Sequence[str]) -> bool:
        assert self._bot is not None and self._msg is not None
        try:
            await asyncio.wait_for(
                self._bot.set_message_reaction(self._chat, self._msg, reaction=reaction),
                REACT_S,
            )
            return True
        except Exception as exc:  # cosmetic: never the answer's problem
            log.info(
                "telegram: could not %s a reaction on message %s in chat %s: %s",
                "set" if reaction else "remove",
                self._msg,
                self._chat,
                exc,
            )
            return False
