"""Telegram voice notes and audio files in, spoken answers out.

In: `voice_attachment` turns a message's `voice` or `audio` into an
`Attachment`. Duration and size (as Telegram states them) are checked
against the tenant's `VoiceGate` BEFORE anything is fetched; audio over a
limit, or for a roost without a transcription server, is not downloaded at
all (the attachment then has no path and the voice handler says why).
Otherwise `getFile` (its own `file_size` checked again) and the download go
through python-telegram-bot, capped at the Bot API's 20 MB, and the bytes
land in the tenant's inbox under a generated name (mode 0600, never the
sender's file name). Only identities that map to a tenant get a gate, so a
stranger's audio is never fetched.

Out: `speak_out` asks the app's `Speak` hook for the answer's voice (OGG/Opus
bytes), a notice (speech failed: the text was already sent), or nothing
(speech not wanted), and uploads the voice with `sendVoice`; it returns the
notice the person still has to get (speech failed, the upload failed or
Telegram did not take it), which the reply sends or keeps in the outbox.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from telegram import Bot, Message
from telegram.error import TelegramError

from bridge.channels.telegram.send import DeliveryError, Sender, Unconfirmed
from bridge.types.messages import Attachment, AttachmentKind, Inbound

log = logging.getLogger(__name__)
DOWNLOAD_LIMIT = 20 * 1024 * 1024  # what getFile lets a bot download
UPLOAD_LIMIT = 50 * 1024 * 1024
NOT_SPOKEN = "🔇 The voice message could not be sent; the text above is the whole answer."
NOT_CONFIRMED = "🔇 Telegram did not confirm the voice message; the text above is the whole answer."


@dataclass(frozen=True, slots=True)
class VoiceGate:
    """Where a person's audio goes and what is fetched at all."""

    inbox: Path
    max_seconds: int
    max_bytes: int
    download: bool = True  # False: no transcription server, nothing is fetched


InboxFor = Callable[[str], VoiceGate | None]
"""Telegram user id -> the tenant's gate; None for a stranger."""

Speak = Callable[[Inbound, str], Awaitable[bytes | str | None]]
"""(the message answered, the answer) -> OGG/Opus bytes, a notice, or None (not wanted)."""


def _seconds(value: int | timedelta | None) -> float:
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value or 0)


def _save(inbox: Path, data: bytes, ext: str) -> Path:
    inbox.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = inbox / f"voice-{secrets.token_hex(8)}.{ext}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return path


async def voice_attachment(bot: Bot, msg: Message, gate: VoiceGate) -> Attachment | None:
    """The message's voice or audio as an Attachment (downloaded when within the gate)."""
    media = msg.voice or msg.audio
    if media is None:
        return None
    kind: AttachmentKind = "voice" if msg.voice is not None else "audio"
    mime = media.mime_type or ("audio/ogg" if kind == "voice" else "")
    name = getattr(media, "file_name", None) or ""
    att = Attachment(kind, "", mime, name, media.file_size or 0, _seconds(media.duration))
    limit = min(gate.max_bytes, DOWNLOAD_LIMIT)
    if not gate.download or att.duration_s > gate.max_seconds or att.size > limit:
        return att
    try:
        file = await bot.get_file(media.file_id)
        if (file.file_size or 0) > limit:
            return replace(att, size=file.file_size or 0)
        data = bytes(await file.download_as_bytearray())
    except TelegramError as exc:
        log.warning("telegram: a voice file could not be fetched: %s", type(exc).__name__)
        return att
    if len(data) > limit:
        return replace(att, size=len(data))
    ext = "ogg" if kind == "voice" else "audio"
    try:
        path = _save(gate.inbox, data, ext)
    except OSError as exc:
        log.error("telegram: a voice file could not be stored: %s", exc.strerror)
        return att
    return replace(att, path=str(path), size=len(data))


async def speak_out(
    sender: Sender, chat_id: int, speak: Speak, inbound: Inbound, text: str
) -> str | None:
    """Send the answer's voice message if one is wanted; returns a notice the
    person still has to get (None: the voice arrived, or none was wanted)."""
    try:
        result = await speak(inbound, text)
    except Exception:
        log.exception("telegram: speaking an answer failed")
        result = NOT_SPOKEN
    if result is None:
        return None
    if isinstance(result, str):
        return result
    if len(result) > UPLOAD_LIMIT:
        return NOT_SPOKEN
    try:
        await sender.voice(chat_id, result)
    except Unconfirmed as exc:  # it may have arrived: not sent again
        sender.failed("unconfirmed")
        log.warning("chat %s: a voice message is unconfirmed: %s", chat_id, exc)
        return NOT_CONFIRMED
    except DeliveryError as exc:
        sender.failed("voice")
        log.error("chat %s: a voice message was not delivered: %s", chat_id, exc)
        return NOT_SPOKEN
    return None
