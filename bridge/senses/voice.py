"""Voice in: a voice note or audio file becomes text the turn runs on.

`VoiceSense.handle(att, ctx)` is the senses handler for the `voice` and
`audio` attachment kinds. It refuses, with a sentence the person can act on,
audio over `[llm.transcribe] max_seconds` or `max_bytes` (the channel has
already declined to download it; the limits are checked again here), a
format no transcription server takes, and any voice at all when no
transcription server is configured. Otherwise it reads the file from the
tenant's inbox the checked way (no symbolic link, a regular file, at most
`max_bytes`), sends it to the injected `Transcribe` under a generated file
name whose extension names the format, removes it (unless `keep_audio`) and
returns the transcript as text for the turn plus a notice for the person
("🎙 heard: …" or the transcript as a quote, `[llm.transcribe] show`).
The audit gets `voice.transcribed` with kind, bytes, whole seconds and the
outcome; never the audio, never the words.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from bridge.core.outfiles import OutFileError, open_out_file
from bridge.types.audit_sink import AuditSink
from bridge.types.messages import Attachment
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)
VOICE_KINDS = frozenset({"voice", "audio"})
# what OpenAI, Groq, faster-whisper and whisper.cpp (with --convert) accept, by extension
EXTENSIONS = {
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/x-opus+ogg": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mp4": "m4a",
    "audio/m4a": "m4a",
    "audio/x-m4a": "m4a",
    "audio/aac": "m4a",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/webm": "webm",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
}
NOT_CONFIGURED = (
    "🎙 Voice notes need a transcription server: set [llm.transcribe] base_url to an "
    "OpenAI-compatible one (OpenAI, Groq, or a local faster-whisper or whisper.cpp "
    "server) and, if it needs one, api_key. Until then, please type your message."
)
HEARD_CHARS = 200  # the "line" notice shows at most this much of the transcript
Show = Literal["line", "quote", "off"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a sense hands the turn: `text` goes before the person's own words,
    `notices` are shown to the person with the answer; a `refusal` replaces the turn."""

    text: str = ""
    notices: tuple[str, ...] = ()
    refusal: str = ""


@dataclass(frozen=True, slots=True)
class Heard:
    """A transcription's outcome: the words, or why there are none (`failure`, for the person)."""

    text: str = ""
    failure: str = ""


Transcribe = Callable[[bytes, str, str], Awaitable[Heard]]
"""(audio bytes, file name, MIME type) -> what was heard (bridge.llm.audio behind it)."""


class SenseContext(Protocol):
    @property
    def tenant(self) -> str: ...

    @property
    def dirs(self) -> TenantDirs: ...


@dataclass(frozen=True, slots=True)
class VoiceLimits:
    max_seconds: int = 300
    max_bytes: int = 20 * 1024 * 1024
    show: Show = "line"
    keep_audio: bool = False


def _clock(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60}:{s % 60:02d}"


def over_limits(att: Attachment, limits: VoiceLimits) -> str:
    """The refusal for audio too long or too large ('' when it fits)."""
    what = "voice note" if att.kind == "voice" else "audio file"
    if att.duration_s > limits.max_seconds:
        return (
            f"🎙 That {what} is {_clock(att.duration_s)} long; I transcribe up to "
            f"{_clock(limits.max_seconds)}. Please send a shorter one, or type it."
        )
    if att.size > limits.max_bytes:
        return (
            f"🎙 That {what} is {att.size / 1_048_576:.1f} MB; I take up to "
            f"{limits.max_bytes / 1_048_576:.0f} MB. Please send a shorter one, or type it."
        )
    return ""


def extension(mime: str) -> str | None:
    return EXTENSIONS.get(mime.split(";")[0].strip().lower())


def heard_notice(text: str, show: Show) -> str:
    """What the person sees of the transcript ('' for `off`)."""
    if show == "off":
        return ""
    if show == "quote":
        return "🎙 heard:\n" + "\n".join(f"> {line}" for line in text.splitlines() if line.strip())
    flat = " ".join(text.split())
    cut = flat if len(flat) <= HEARD_CHARS else flat[: HEARD_CHARS - 1].rstrip() + "…"
    return f"🎙 heard: “{cut}”"


def read_inbox_file(inbox: Path, path: Path, limit: int) -> bytes | None:
    """The file's bytes when it lies in `inbox` the checked way and is at most `limit`."""
    try:
        fd = open_out_file(inbox, path)
    except OutFileError as exc:
        log.warning("voice: the audio file cannot be read: %s", exc)
        return None
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fh.fileno()).st_size > limit:
            return None
        data = fh.read(limit + 1)
    return data if len(data) <= limit else None


class VoiceSense:
    """The `voice`/`audio` handler; `transcribe` is None when no server is configured."""

    def __init__(
        self, transcribe: Transcribe | None, limits: VoiceLimits, audit: AuditSink
    ) -> None:
        self._transcribe = transcribe
        self.limits = limits
        self._audit = audit

    def configure(self, transcribe: Transcribe | None, limits: VoiceLimits) -> None:
        """A reload's server and limits, from the next voice note on."""
        self._transcribe, self.limits = transcribe, limits

    async def handle(self, att: Attachment, ctx: SenseContext) -> Prepared:
        path = Path(att.path) if att.path else None
        try:
            prepared, outcome, size = await self._prepare(att, ctx, path)
        finally:
            if path is not None and not self.limits.keep_audio:
                _remove(ctx.dirs.inbox, path)
        details = {
            "kind": att.kind,
            "bytes": size,
            "duration_s": round(att.duration_s),
            "outcome": outcome,
        }
        await self._audit.emit("voice.transcribed", ctx.tenant, details)
        return prepared

    async def _prepare(
        self, att: Attachment, ctx: SenseContext, path: Path | None
    ) -> tuple[Prepared, str, int]:
        """(what the turn gets, the audit outcome, the bytes read)."""
        too_much = over_limits(att, self.limits)
        if too_much:
            return Prepared(refusal=too_much), "too_large", att.size
        if self._transcribe is None:
            return Prepared(refusal=NOT_CONFIGURED), "not_configured", att.size
        ext = extension(att.mime)
        if ext is None:
            kinds = ", ".join(sorted(set(EXTENSIONS.values())))
            refusal = f"🎙 I cannot transcribe this audio format; please send {kinds}."
            return Prepared(refusal=refusal), "unsupported", att.size
        data = read_inbox_file(ctx.dirs.inbox, path, self.limits.max_bytes) if path else None
        if data is None:
            refusal = "🎙 I could not fetch that audio; please send it again."
            return Prepared(refusal=refusal), "failed", att.size
        heard = await self._transcribe(data, f"voice.{ext}", att.mime)
        if heard.failure:
            refusal = f"🎙 I could not transcribe that: {heard.failure}."
            return Prepared(refusal=refusal), "failed", len(data)
        if not heard.text.strip():
            refusal = "🎙 I could not make out any words in that recording. Please try again."
            return Prepared(refusal=refusal), "empty", len(data)
        notice = heard_notice(heard.text, self.limits.show)
        text = f"(voice note, transcribed) {heard.text.strip()}"
        return Prepared(text=text, notices=(notice,) if notice else ()), "ok", len(data)


def _remove(inbox: Path, path: Path) -> None:
    """Delete the audio file, but only one that lies in the inbox."""
    if not Path(os.path.abspath(path)).is_relative_to(os.path.abspath(inbox)):
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("voice: could not remove an audio file: %s", exc.strerror)
