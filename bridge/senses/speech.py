"""Speech out: when an answer is also spoken, and what of it is read aloud.

`/voice on|off` is a per-chat choice (the `chat_settings` row `voice`); a
channel's own `reply_voice_to_voice` setting speaks the answer to a voice
note too (`speak_wanted`). Which channels send voice at all is what their
platforms declare (`Abilities.voice`). `speakable()` is the text the speech
server gets: code blocks, inline-code backticks, URLs (a Markdown link keeps its label),
quoted lines and "🎙" notices are left out, Markdown marks are dropped, and
an answer over `[llm.speech] max_chars` is cut at the last sentence end that
fits, followed by "…the rest is in the text." The text reply is always sent
as well; speaking only ever adds a voice message (Telegram) or a player under
the answer (the web page, `bridge.channels.web.speech`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from bridge.core.commands import Command, CommandContext, UsageError
from bridge.loadout.chat_settings import ChatSettings
from bridge.types.audit_sink import AuditSink

REST = " …the rest is in the text."
KEY = "voice"
_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*\)")
_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.I)
_MARKS = re.compile(r"(\*\*|__|~~|[*_`#|])")
_SENTENCE_END = re.compile(r"[.!?…](?=\s|$)")


def speakable(text: str, max_chars: int) -> str:
    """What is read aloud of `text` ('' when nothing speakable is left)."""
    text = _FENCE.sub(" ", text)
    lines = [
        ln
        for ln in text.splitlines()
        if not ln.lstrip().startswith((">", "🎙")) and not set(ln.strip()) <= set("-=|: ")
    ]
    text = _LINK.sub(r"\1", "\n".join(lines))
    text = _URL.sub("", text)
    text = _MARKS.sub("", text)
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    room = text[: max(1, max_chars - len(REST))]
    ends = [m.end() for m in _SENTENCE_END.finditer(room)]
    if ends:
        return room[: ends[-1]] + REST
    cut = room.rsplit(" ", 1)[0] if " " in room else room
    return cut.rstrip() + REST


def speak_wanted(chat_on: bool, was_voice: bool, reply_voice_to_voice: bool) -> bool:
    return chat_on or (was_voice and reply_voice_to_voice)


class VoiceCommands:
    """`/voice [on|off]`: this chat's answers also as voice messages."""

    def __init__(
        self,
        chats: ChatSettings,
        audit: AuditSink,
        configured: bool,
        to_voice: Callable[[str], bool],
        speaks: Callable[[str], bool],
        where: str,
    ) -> None:
        self._chats = chats
        self._audit = audit
        self.configured = configured  # a speech server is configured ([llm.speech]; reloaded)
        self._to_voice = to_voice  # channel -> its reply_voice_to_voice
        self._speaks = speaks  # channel -> it can send voice messages
        self._where = where  # "Telegram and WhatsApp": the channels that can

    def commands(self) -> Iterable[Command]:
        return (
            Command(
                "voice",
                "/voice [on | off]",
                "answers in this chat also as voice messages",
                self.voice,
            ),
        )

    def is_on(self, tenant: str, channel: str, chat: str) -> bool:
        return self._chats.get(tenant, channel, chat, KEY) == "on"

    async def voice(self, ctx: CommandContext, args: str) -> str:
        i = ctx.inbound
        wanted = args.strip().lower()
        if not wanted:
            return self._status(self.is_on(ctx.tenant, i.channel, i.chat), i.channel)
        if wanted not in ("on", "off"):
            raise UsageError(f"Unknown /voice choice {wanted!r}.")
        speaks = self._speaks(i.channel)
        if wanted == "on" and not self.configured:
            return (
                "🔇 Spoken answers need a speech server: set [llm.speech] base_url (an "
                "OpenAI-compatible /audio/speech endpoint) and, if it needs one, api_key."
            )
        on = wanted == "on"
        if on:
            await self._chats.set(ctx.tenant, i.channel, i.chat, KEY, "on")
        else:
            await self._chats.clear(ctx.tenant, i.channel, i.chat, KEY)
        await self._audit.emit(
            "voice.changed", ctx.tenant, {"on": on, "channel": i.channel, "chat": i.chat}
        )
        if not speaks:
            return (
                f"Voice is {wanted} for this chat; voice messages are sent on {self._where} only."
            )
        if on and i.channel == "web":
            return "🔊 Answers in this chat are now also spoken: the page plays each one."
        return "🔊 Answers in this chat are now also spoken." if on else "🔇 Voice is off."

    def _status(self, on: bool, channel: str) -> str:
        lines = [f"Voice answers in this chat: {'on' if on else 'off'}."]
        if self._to_voice(channel):
            lines.append("A voice note is always answered with voice too.")
        if not self.configured:
            lines.append("No speech server is configured ([llm.speech] base_url).")
        lines.append("/voice on or /voice off changes it.")
        return "\n".join(lines)
