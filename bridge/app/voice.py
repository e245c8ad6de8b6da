"""Voice wiring: the audio clients, the voice handler, /voice and the channels' hooks.

`Voice` makes the transcription and speech clients from `[llm.transcribe]`
and `[llm.speech]` (bridge.llm.audio; None when not configured), the voice
handler (`bridge.senses.voice.VoiceSense`) and the `/voice` command rows.
For a channel that fetches voice notes it gives `gate(channel)` (a known
person's gate: their inbox and the limits); for one whose platform declares
voice out (`Abilities.voice`), `speak_hook(channel, to_voice)` (the answer's
voice, when the chat asked for it, or, with the channel's
`reply_voice_to_voice`, when a voice note is answered); and `handle`,
registered with the senses pipeline for the kinds `voice` and `audio`:
inside the turn (so in the chat's order), the transcript goes before the
person's words and "🎙 heard: …" opens the reply; a refusal is the reply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.core.config import Settings
from bridge.core.perceive import Prepared as Perceived
from bridge.core.tenants import TenantResolver
from bridge.llm.audio import AudioClient, AudioError, AudioServer, audio_server
from bridge.loadout.chat_settings import ChatSettings
from bridge.senses.handlers import SenseContext
from bridge.senses.speech import VoiceCommands, speak_wanted, speakable
from bridge.senses.voice import Heard, Transcribe, VoiceLimits, VoiceSense
from bridge.types.audit_sink import AuditSink
from bridge.types.messages import Attachment, Inbound
from bridge.types.platform import Platforms
from bridge.types.tenant_dirs import TenantDirs

if TYPE_CHECKING:  # python-telegram-bot is imported only where Telegram runs
    from bridge.channels.telegram.voice import Speak, VoiceGate

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


def audio_servers(settings: Settings) -> tuple[AudioServer | None, AudioServer | None]:
    """The transcription and speech servers `settings` name (None: off); a reload that
    changes them applies them (`Voice.reload`)."""
    return audio_server(settings.llm, "transcribe"), audio_server(settings.llm, "speech")


class Voice:
    def __init__(
        self,
        settings: Settings,
        resolver: TenantResolver,
        chats: ChatSettings,
        audit: AuditSink,
        platforms: Platforms,
    ) -> None:
        llm = settings.llm
        self.servers = heard, spoken = audio_servers(settings)
        self.transcriber = AudioClient(heard) if heard is not None else None
        self.speaker = AudioClient(spoken) if spoken is not None else None
        t = llm.transcribe
        self.limits = VoiceLimits(t.max_seconds, t.max_bytes, t.show, t.keep_audio)
        transcribe = transcribe_with(self.transcriber) if self.transcriber else None
        self.sense = VoiceSense(transcribe, self.limits, audit)
        self._to_voice: set[str] = set()  # channels whose voice notes are answered spoken
        speaking = platforms.able("voice")
        self.commands = VoiceCommands(
            chats,
            audit,
            self.speaker is not None,
            self._to_voice.__contains__,
            speaking.__contains__,
            " and ".join(platforms.titles(speaking)) or "no channel",
        )
        self._settings, self._resolver, self._audit = settings, resolver, audit
        self._retired: list[AudioClient] = []  # replaced by a reload: closed at the end

    def reload(self, settings: Settings) -> bool:
        """Apply a reloaded configuration: its audio servers (new clients; the old ones
        finish what they run and are closed with the voice), the transcription limits and
        the speech settings. True when a server changed."""
        servers = audio_servers(settings)
        changed = servers != self.servers
        if changed:
            self._retired += [c for c in (self.transcriber, self.speaker) if c is not None]
            heard, spoken = self.servers = servers
            self.transcriber = AudioClient(heard) if heard is not None else None
            self.speaker = AudioClient(spoken) if spoken is not None else None
        t = settings.llm.transcribe
        self.limits = VoiceLimits(t.max_seconds, t.max_bytes, t.show, t.keep_audio)
        transcribe = transcribe_with(self.transcriber) if self.transcriber else None
        self.sense.configure(transcribe, self.limits)
        self.commands.configured = self.speaker is not None
        self._settings = settings
        return changed

    def _tenant(self, inbound: Inbound) -> str | None:
        return self._resolver.resolve(inbound)

    def gate(self, channel: str) -> Callable[[str], VoiceGate | None]:
        """A channel's `identity -> gate` (None for a stranger: nothing is fetched)."""

        def inbox_for(identity: str) -> VoiceGate | None:
            tenant = self._tenant(Inbound(channel, identity, identity, "", ""))
            if tenant is None:
                return None
            from bridge.channels.telegram.voice import VoiceGate

            inbox = TenantDirs.of(self._settings.home, tenant).inbox
            lim = self.limits
            return VoiceGate(inbox, lim.max_seconds, lim.max_bytes, self.transcriber is not None)

        return inbox_for

    def speak_hook(self, channel: str, to_voice: bool = False) -> Speak:
        """The speak hook of a channel that sends voice; `to_voice`: its
        `reply_voice_to_voice` (a voice note's answer is spoken too)."""
        if to_voice:
            self._to_voice.add(channel)

        async def speak(inbound: Inbound, text: str) -> bytes | str | None:
            return await self.speak(inbound, text, to_voice)

        return speak

    async def handle(self, att: Attachment, ctx: SenseContext) -> Perceived:
        """The senses pipeline's handler for `voice` and `audio`: the transcript goes
        before the person's words, "🎙 heard: …" opens the reply, a refusal is the reply."""
        done = await self.sense.handle(att, _Ctx(ctx.turn.tenant, ctx.turn.dirs))
        return Perceived(text_prefix=done.text, notices=done.notices, refusal=done.refusal)

    async def speak(self, inbound: Inbound, text: str, to_voice: bool) -> bytes | str | None:
        """The answer's voice (OGG/Opus), a notice when speaking failed, or None."""
        tenant = self._tenant(inbound)
        if tenant is None or self.speaker is None:
            return None
        on = self.commands.is_on(tenant, inbound.channel, inbound.chat)
        was_voice = any(a.kind == "voice" for a in inbound.attachments)
        if not speak_wanted(on, was_voice, to_voice):
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
        for client in (self.transcriber, self.speaker, *self._retired):
            if client is not None:
                await client.aclose()
