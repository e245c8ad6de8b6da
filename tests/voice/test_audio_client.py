"""The audio client against the fake OpenAI server's audio endpoints (real HTTP)."""

from __future__ import annotations

import pytest

from bridge.core.config import load_settings
from bridge.llm.audio import AudioClient, AudioError, AudioServer, audio_server
from tests.fakes.fake_openai import FakeOpenAI, Garbage, Status
from tests.fakes.ogg_opus import ogg_opus, read_ogg_opus

KEY = "sk-audio-test"


async def _nosleep(s: float) -> None:
    return None


def client(fake: FakeOpenAI, purpose: str = "transcribe", key: str | None = KEY) -> AudioClient:
    model = "whisper-1" if purpose == "transcribe" else "tts-1"
    server = AudioServer(purpose, fake.base_url, key, model, 10.0, 2)  # type: ignore[arg-type]
    return AudioClient(server, sleep=_nosleep)


async def test_transcribes_a_multipart_upload() -> None:
    async with FakeOpenAI(api_key=KEY) as fake:
        audio = ogg_opus({"TRANSCRIPT": "buy oat milk and call Ana"}, seconds=3)
        c = client(fake)
        try:
            text = await c.transcribe(audio, "voice.ogg", "audio/ogg")
        finally:
            await c.aclose()
        assert text == "buy oat milk and call Ana"
        (req,) = fake.audio.of("transcriptions")
        assert req.fields == {"model": "whisper-1", "response_format": "json"}
        assert (req.filename, req.content_type, req.data) == ("voice.ogg", "audio/ogg", audio)
        assert req.headers["Authorization"] == f"Bearer {KEY}"


async def test_retries_busy_then_succeeds_and_gives_up_with_a_clear_reply() -> None:
    async with FakeOpenAI(api_key=KEY) as fake:
        fake.audio.script(Status(503), Status(429, retry_after=0))
        c = client(fake)
        audio = ogg_opus({"TRANSCRIPT": "hello"})
        assert await c.transcribe(audio, "voice.ogg", "audio/ogg") == "hello"
        fake.audio.script(Status(500), Status(502), Status(503))
        with pytest.raises(AudioError) as err:
            await c.transcribe(audio, "voice.ogg", "audio/ogg")
        await c.aclose()
        assert err.value.kind == "unavailable"
        assert "busy or unreachable (HTTP 503)" in err.value.reply
        assert len(fake.audio.of("transcriptions")) == 6


@pytest.mark.parametrize(
    ("key", "model", "kind", "words"),
    [
        ("sk-wrong", "whisper-1", "auth", "check [llm.transcribe] api_key"),
        (KEY, "no-such-model", "not_found", "check [llm.transcribe] base_url and model"),
    ],
)
async def test_refusals_name_what_to_check(key: str, model: str, kind: str, words: str) -> None:
    async with FakeOpenAI(api_key=KEY) as fake:
        fake.audio.models = ["whisper-1"]
        server = AudioServer("transcribe", fake.base_url, key, model, 10.0, 2)
        c = AudioClient(server, sleep=_nosleep)
        with pytest.raises(AudioError) as err:
            await c.transcribe(ogg_opus(), "voice.ogg", "audio/ogg")
        await c.aclose()
        assert err.value.kind == kind and words in err.value.reply
        assert key not in err.value.reply
        assert len(fake.audio.requests) == 1  # not retried


async def test_corrupt_audio_and_plain_text_answers() -> None:
    async with FakeOpenAI() as fake:
        c = client(fake, key=None)
        with pytest.raises(AudioError) as err:
            await c.transcribe(b"OggS not really", "voice.ogg", "audio/ogg")
        assert "HTTP 400" in err.value.reply
        fake.audio.script(Garbage(b"plain words\n", content_type="text/plain"))
        assert await c.transcribe(ogg_opus(), "voice.ogg", "audio/ogg") == "plain words"
        fake.audio.script(Garbage(b'{"nope": 1}', content_type="application/json"))
        with pytest.raises(AudioError, match="without a transcript"):
            await c.transcribe(ogg_opus(), "voice.ogg", "audio/ogg")
        await c.aclose()
        assert "Authorization" not in fake.audio.requests[0].headers


async def test_speech_returns_ogg_opus_of_the_input() -> None:
    async with FakeOpenAI(api_key=KEY) as fake:
        c = client(fake, "speech")
        audio = await c.speak("Your train leaves at nine.", "nova")
        fake.audio.script(Garbage(b"ID3\x04 mp3 bytes", content_type="audio/mpeg"))
        with pytest.raises(AudioError, match="OGG/Opus"):
            await c.speak("again", "nova")
        await c.aclose()
        info = read_ogg_opus(audio)
        assert info.comments == {"SPOKEN": "Your train leaves at nine.", "VOICE": "nova"}
        body = fake.audio.of("speech")[0].fields
        assert body == {
            "model": "tts-1",
            "input": "Your train leaves at nine.",
            "voice": "nova",
            "response_format": "opus",
        }


def test_servers_default_to_the_chat_backend_only_when_it_speaks_openai() -> None:
    s = load_settings(llm={"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-chat"})
    t = audio_server(s.llm, "transcribe")
    assert t is not None and (t.base_url, t.api_key, t.model) == (
        "http://127.0.0.1:9/v1",
        "sk-chat",
        "whisper-1",
    )
    # another server: the chat key is not sent there
    s = load_settings(
        llm={
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "sk-chat",
            "speech": {"base_url": "http://tts.local:8000/v1/"},
        }
    )
    sp = audio_server(s.llm, "speech")
    assert sp is not None and (sp.base_url, sp.api_key) == ("http://tts.local:8000/v1", None)
    assert audio_server(load_settings(llm={"provider": "offline"}).llm, "transcribe") is None
    assert audio_server(load_settings(llm={"api_key": "sk-ant-x"}).llm, "speech") is None
    s = load_settings(llm={"api_key": "sk-openai", "transcribe": {"enabled": False}})
    assert audio_server(s.llm, "transcribe") is None
    assert audio_server(s.llm, "speech").base_url == "https://api.openai.com/v1"  # type: ignore[union-attr]


def test_models_tables_take_no_audio_keys() -> None:
    from bridge.core.config import ConfigError

    with pytest.raises(ConfigError, match=r"models\.big\.transcribe"):
        load_settings(models={"big": {"model": "x", "transcribe": {"model": "w"}}})
