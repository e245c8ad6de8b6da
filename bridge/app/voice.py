"""Voice wiring: the audio clients, the voice handler, /voice and the Telegram hooks.

`Voice` makes the transcription and speech clients from `[llm.transcribe]`
and `[llm.speech]` (bridge.llm.audio; None when not configured), the voice
handler (`bridge.senses.voice.VoiceSense`) and the `/voice` command rows.
For the Telegram channel it gives `inbox_for` (a known person's gate:
their inbox and the limits), `speak` (the answer's voice, when the chat
asked for it or a voice note is answered with `reply_voice_to_voice`) and
`front`, which runs the handler on a message's voice attachments before
the core sees it: the transcript becomes the message's text and the notice
("🎙 heard: …") is put before the answer; a refusal is the reply. The front
holds a per-chat FIFO lock across the handler and the core's answer, so a
text sent while a voice note is transcribed is answered after it.
(Once the senses pipeline runs handlers inside the turn, `front` gives way to
one registration line: kinds `voice` and `audio` -> `VoiceSense.handle`.)
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace

from bridge.channels.telegram_voice import VoiceGate
from bridge.core.config import Settings
from bridge.core.locks import KeyedLocks
from bridge.core.tenants import TenantResolver
from bridge.llm.audio import AudioClient, AudioError, audio_server
from bridge.loadout.chat_settings import ChatSettings
from bridge.senses.speech import VoiceCommands, speak_wanted, speakable
from bridge.senses.voice import VOICE_KINDS, Heard, Prepared, Transcribe, VoiceLimits, VoiceSense
from bridge.types.audit_sink import AuditSink
from bridge.types.messages import Answer, Final, Inbound, Reply
from bridge.types.tenant_dirs import TenantDirs

NOT_SPOKEN = "🔇 I could not speak this answer ({why}); the text above is the whole answer."


def transcribe_with(client: AudioClient) -> Transcribe:
    async def run(data: bytes, filename: str, mime: str) -> Heard:
        try:
            return Heard(await client.transcribe(data, filename, mime))
        except AudioError as exc:
            return Heard(failure=exc.reply)

    return run


@dataclass(frozen=True, slots=True)
class _Ctx:
    tenant: str
    dirs: TenantDirs


class NoticeReply:
    """A `Reply` whose answer starts with the voice notices."""

    def __init__(self, inner: Reply, notice: str) -> None:
        self._inner, self._notice, self._started = inner, notice, False

    def working(self) -> AbstractAsyncContextManager[object]:
        return self._inner.working()

    async def delta(self, piece: str) -> None:
        if not self._started:
            self._started = True
            piece = f"{self._notice}\n\n{piece}"
        await self._inner.delta(piece)

    async def send(self, final: Final) -> None:
        await self._inner.send(replace(final, text=f"{self._notice}\n\n{final.text}"))


class Voice:
    def __init__(
        self, settings: Settings, resolver: TenantResolver, db: sqlite3.Connection, audit: AuditSink
    ) -> None:
        llm = settings.llm
        heard, spoken = audio_server(llm, "transcribe"), audio_server(llm, "speech")
        self.transcriber = AudioClient(heard) if heard is not None else None
        self.speaker = AudioClient(spoken) if spoken is not None else None
        t = llm.transcribe
        self.limits = VoiceLimits(t.max_seconds, t.max_bytes, t.show, t.keep_audio)
        transcribe = transcribe_with(self.transcriber) if self.transcriber else None
        self.sense = VoiceSense(transcribe, self.limits, audit)
        self.commands = VoiceCommands(
            ChatSettings(db),
            audit,
            self.speaker is not None,
            settings.telegram.reply_voice_to_voice,
        )
        self._settings, self._resolver, self._audit = settings, resolver, audit
        self._locks: KeyedLocks[tuple[str, str]] = KeyedLocks()

    def _tenant(self, inbound: Inbound) -> str | None:
        return self._resolver.resolve(inbound)

    def inbox_for(self, identity: str) -> VoiceGate | None:
        tenant = self._tenant(Inbound("telegram", identity, identity, "", ""))
        if tenant is None:
            return None
        inbox = TenantDirs.of(self._settings.home, tenant).inbox
        lim = self.limits
        return VoiceGate(inbox, lim.max_seconds, lim.max_bytes, self.transcriber is not None)

    def front(self, answer: Answer) -> Answer:
        async def run(inbound: Inbound, reply: Reply) -> Final:
            async with self._locks.hold((inbound.channel, inbound.chat)):
                return await self._answer(answer, inbound, reply)

        return run

    async def _answer(self, answer: Answer, inbound: Inbound, reply: Reply) -> Final:
        voices = [a for a in inbound.attachments if a.kind in VOICE_KINDS]
        tenant = self._tenant(inbound) if voices else None
        if tenant is None:
            return await answer(inbound, reply)
        ctx = _Ctx(tenant, TenantDirs.of(self._settings.home, tenant).ensure())
        done: list[Prepared] = [await self.sense.handle(a, ctx) for a in voices]
        refusal = next((p.refusal for p in done if p.refusal), "")
        if refusal:
            final = Final(refusal, "refusal")
            await reply.send(final)
            return final
        parts = [p.text for p in done if p.text] + ([inbound.text] if inbound.text.strip() else [])
        rest = tuple(a for a in inbound.attachments if a.kind not in VOICE_KINDS)
        heard = replace(inbound, text="\n\n".join(parts), has_text=True, attachments=rest)
        notice = "\n".join(n for p in done for n in p.notices)
        return await answer(heard, NoticeReply(reply, notice) if notice else reply)

    async def speak(self, inbound: Inbound, text: str) -> bytes | str | None:
        """The answer's voice (OGG/Opus), a notice when speaking failed, or None."""
        tenant = self._tenant(inbound)
        if tenant is None or self.speaker is None:
            return None
        on = self.commands.is_on(tenant, inbound.channel, inbound.chat)
        was_voice = any(a.kind == "voice" for a in inbound.attachments)
        if not speak_wanted(on, was_voice, self._settings.telegram.reply_voice_to_voice):
            return None
        speech = self._settings.llm.speech
        words = speakable(text, speech.max_chars)
        if not words:
            return None
        details: dict[str, object] = {"chars": len(words), "channel": inbound.channel}
        try:
            audio = await self.speaker.speak(words, speech.voice)
        except AudioError as exc:
            await self._audit.emit("voice.spoken", tenant, {**details, "outcome": "failed"})
            return NOT_SPOKEN.format(why=exc.reply)
        details |= {"bytes": len(audio), "outcome": "ok"}
        await self._audit.emit("voice.spoken", tenant, details)
        return audio

    async def aclose(self) -> None:
        for client in (self.transcriber, self.speaker):
            if client is not None:
                await client.aclose()
