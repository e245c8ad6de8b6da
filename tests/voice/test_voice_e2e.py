"""Voice end to end: python-telegram-bot against the fake Bot API, the real OpenAI
backend and audio client against the fake model server, real SQLite and files."""

from __future__ import annotations

from pathlib import Path

from bridge.audit.catalogue import EVENTS
from bridge.senses.voice import NOT_CONFIGURED
from tests.fakes.fake_openai import Status
from tests.fakes.ogg_opus import ogg_opus, read_ogg_opus
from tests.telegram.conftest import ALICE
from tests.voice.conftest import Voiced, voiced

WORDS = "remind me to water the basil on friday"


def shown(v: Voiced) -> list[str]:
    return [m.text for m in v.bot.sent_to(ALICE)]


async def answered(v: Voiced, count: int = 1) -> None:
    await v.bot.wait_until(lambda: len(v.bot.sent_to(ALICE)) >= count)


async def test_a_voice_note_becomes_the_turn_and_is_answered_in_text_and_voice(
    home: Path,
) -> None:
    async with voiced(home, reply_voice_to_voice=True) as v:
        note = ogg_opus({"TRANSCRIPT": WORDS}, seconds=4)
        v.bot.push_voice(ALICE, note, duration=4)
        await v.bot.wait_until(lambda: bool(v.bot.voices_to(ALICE)))
        # the model saw the transcript
        assert v.user_texts()[-1].endswith(f"(voice note, transcribed) {WORDS}")
        (upload,) = v.model.audio.of("transcriptions")
        assert upload.data == note and upload.filename == "voice.ogg"
        # the person sees what was heard, then the answer
        (text,) = shown(v)
        assert text == f"🎙 heard: “{WORDS}”\n\nSure. You said: {WORDS}"
        # ...and hears the answer (not the notice)
        (voice,) = v.bot.voices_to(ALICE)
        spoken = read_ogg_opus(voice.upload.data).comments["SPOKEN"]
        assert spoken == f"Sure. You said: {WORDS}"
        # the audio is gone from the inbox; the audit has metadata only
        inbox = v.roost.tenant_dirs("alice").inbox
        assert list(inbox.iterdir()) == []
        (heard,) = v.events("voice.transcribed")
        assert heard == {"kind": "voice", "bytes": len(note), "duration_s": 4, "outcome": "ok"}
        (said,) = v.events("voice.spoken")
        assert said["outcome"] == "ok" and said["bytes"] == len(voice.upload.data)
        for event in ("voice.transcribed", "voice.spoken"):
            assert set(v.events(event)[0]) <= set(EVENTS[event])
        assert "basil" not in repr(v.audit.events)


async def test_voice_is_per_chat_with_slash_voice(home: Path) -> None:
    async with voiced(home) as v:
        v.bot.push_text(ALICE, "/voice on")
        await answered(v)
        assert "now also spoken" in shown(v)[-1]
        v.bot.push_text(ALICE, "what is on today? see https://example.org/cal")
        await v.bot.wait_until(lambda: len(v.bot.voices_to(ALICE)) == 1)
        spoken = read_ogg_opus(v.bot.voices_to(ALICE)[0].upload.data).comments["SPOKEN"]
        assert spoken == "Sure. You said: what is on today? see"  # the URL is not read
        v.bot.push_text(ALICE, "/voice off")
        await answered(v, 3)
        v.bot.push_text(ALICE, "and tomorrow?")
        await answered(v, 4)
        assert shown(v)[-1] == "Sure. You said: and tomorrow?"
        assert len(v.bot.voices_to(ALICE)) == 1
        # without reply_voice_to_voice a voice note is answered in text only
        v.bot.push_voice(ALICE, ogg_opus({"TRANSCRIPT": "hello"}), duration=1)
        await answered(v, 5)
        assert len(v.bot.voices_to(ALICE)) == 1
        assert [e["on"] for e in v.events("voice.changed")] == [True, False]


async def test_too_long_and_too_large_notes_are_refused_before_download(home: Path) -> None:
    async with voiced(home, llm=None) as v:
        v.bot.push_voice(ALICE, ogg_opus({"TRANSCRIPT": "x"}), duration=601)
        await answered(v)
        assert shown(v)[-1].startswith("🎙 That voice note is 10:01 long; I transcribe up to 5:00.")
        v.bot.push_voice(
            ALICE,
            ogg_opus(),
            duration=30,
            kind="audio",
            mime="audio/mpeg",
            file_size=24 * 1024 * 1024,
            file_name="../../etc/passwd.mp3",
        )
        await answered(v, 2)
        assert "That audio file is 24.0 MB; I take up to 20 MB." in shown(v)[-1]
        assert v.bot.calls_of("getFile") == [] and v.bot.calls_of("download") == []
        assert v.model.audio.requests == [] and v.model.requests == []
        outcomes = [e["outcome"] for e in v.events("voice.transcribed")]
        assert outcomes == ["too_large", "too_large"]


async def test_no_transcription_server_gets_a_clear_reply(home: Path) -> None:
    async with voiced(home, llm={"provider": "offline"}) as v:
        v.bot.push_voice(ALICE, ogg_opus({"TRANSCRIPT": "hi"}), duration=2)
        await answered(v)
        assert shown(v) == [NOT_CONFIGURED]
        assert "[llm.transcribe] base_url" in NOT_CONFIGURED
        assert v.bot.calls_of("getFile") == []
        v.bot.push_text(ALICE, "/voice on")
        await answered(v, 2)
        assert "need a speech server: set [llm.speech] base_url" in shown(v)[-1]


async def test_speech_failure_keeps_the_text(home: Path) -> None:
    async with voiced(home) as v:
        v.bot.push_text(ALICE, "/voice on")
        await answered(v)
        v.model.audio.script(Status(500), Status(502), Status(503))
        v.bot.push_text(ALICE, "tell me a joke")
        await answered(v, 3)
        assert shown(v)[1] == "Sure. You said: tell me a joke"
        assert shown(v)[2].startswith("🔇 I could not speak this answer (the speech server is busy")
        assert v.bot.voices_to(ALICE) == []
        assert v.events("voice.spoken")[0]["outcome"] == "failed"


async def test_transcription_failure_and_silence_are_told(home: Path) -> None:
    async with voiced(home) as v:
        v.model.audio.script(Status(401))
        v.bot.push_voice(ALICE, ogg_opus({"TRANSCRIPT": "x"}), duration=1)
        await answered(v)
        assert "check [llm.transcribe] api_key" in shown(v)[-1]
        v.bot.push_voice(ALICE, ogg_opus({}), duration=1)
        await answered(v, 2)
        assert shown(v)[-1].startswith("🎙 I could not make out any words")
        assert v.model.requests == []  # no turn ran
        assert list(v.roost.tenant_dirs("alice").inbox.iterdir()) == []


async def test_a_strangers_voice_note_is_never_fetched(home: Path) -> None:
    async with voiced(home) as v:
        v.bot.push_voice(999, ogg_opus({"TRANSCRIPT": "let me in"}), duration=3)
        await v.bot.wait_until(lambda: bool(v.bot.sent_to(999)))
        assert v.bot.calls_of("getFile") == [] and v.model.audio.requests == []


async def test_quote_mode_and_keep_audio(home: Path) -> None:
    async with voiced(home, transcribe={"show": "quote", "keep_audio": True}) as v:
        note = ogg_opus({"TRANSCRIPT": "first line\nsecond line"}, seconds=2)
        v.bot.push_voice(ALICE, note, duration=2, caption="(from the car)")
        await answered(v)
        (sent,) = v.bot.sent_to(ALICE)
        assert sent.text.startswith("🎙 heard:\nfirst line\nsecond line\n\nSure. You said:")
        assert any(e["type"] == "blockquote" for e in sent.entities)
        assert v.user_texts()[-1].endswith("(from the car)")  # the caption goes with it
        (kept,) = v.roost.tenant_dirs("alice").inbox.iterdir()
        assert kept.read_bytes() == note and kept.name.startswith("voice-")
        assert kept.stat().st_mode & 0o777 == 0o600


async def test_the_daemon_wires_voice_into_its_telegram_channel(home: Path) -> None:
    from bridge.app.build import build
    from bridge.app.channels_up import telegram_channel
    from bridge.core.config import load_settings
    from tests.telegram.conftest import TOKEN

    settings = load_settings(
        home=home,
        telegram={"token": TOKEN, "api_base_url": "http://127.0.0.1:9/bot"},
        tenants={"alice": {"telegram_ids": [ALICE]}},
    )
    roost = await build(settings)
    try:
        channel = telegram_channel(settings, roost, {}).channel
        assert channel.voice_inbox is not None and channel.speak is not None  # type: ignore[attr-defined]
        gate = roost.voice.gate("telegram")(str(ALICE))
        assert gate is not None and gate.inbox == roost.tenant_dirs("alice").inbox
        assert not gate.download  # no transcription server configured: nothing is fetched
        assert roost.voice.gate("telegram")("999") is None
        assert channel.app.bot.base_file_url.startswith("http://127.0.0.1:9/file/bot")  # type: ignore[attr-defined]
        assert "voice" in {c["name"] for c in roost.command_list()}
    finally:
        await roost.aclose()
