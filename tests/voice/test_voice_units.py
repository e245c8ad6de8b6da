"""The pure parts: what is read aloud, the handler's refusals and checked reads,
and the fake Bot API's voice limits (through python-telegram-bot)."""

from __future__ import annotations

from pathlib import Path

import pytest
from telegram import Bot
from telegram.error import BadRequest

from bridge.senses.speech import REST, speak_wanted, speakable
from bridge.senses.voice import Heard, VoiceLimits, VoiceSense, heard_notice
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Attachment
from bridge.types.tenant_dirs import TenantDirs
from tests.fakes.ogg_opus import ogg_opus
from tests.telegram.conftest import TOKEN
from tests.telegram.fake_bot_api import FakeBotAPI


def test_code_urls_quotes_and_notices_are_not_read_aloud() -> None:
    text = (
        "🎙 heard: “what is up”\n\n"
        "> quoted words\n"
        "Run this:\n```bash\nrm -rf /tmp/x\n```\n"
        "Then see [the docs](https://example.org/docs) or https://x.y/z?q=1 — **done**."
    )
    assert speakable(text, 1500) == "Run this: Then see the docs or — done."


def test_long_answers_stop_at_a_sentence_end_within_the_cap() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(200))
    spoken = speakable(text, 300)
    assert len(spoken) <= 300 and spoken.endswith("is here." + REST)
    one_long = "word " * 400
    cut = speakable(one_long, 200)
    assert len(cut) <= 200 and cut.endswith("word" + REST)
    assert speakable("```only code```", 100) == ""


def test_when_speech_is_wanted() -> None:
    assert speak_wanted(True, False, False)
    assert speak_wanted(False, True, True)
    assert not speak_wanted(False, True, False)
    assert not speak_wanted(False, False, True)


def test_heard_notice_shapes() -> None:
    long = "a " * 300
    line = heard_notice(long, "line")
    assert line.startswith("🎙 heard: “a a") and line.endswith("…”") and len(line) < 220
    assert heard_notice("x\ny", "quote") == "🎙 heard:\n> x\n> y"
    assert heard_notice("x", "off") == ""


class Ctx:
    def __init__(self, dirs: TenantDirs) -> None:
        self.tenant, self.dirs = dirs.tenant, dirs


async def test_the_handler_reads_only_regular_files_in_the_inbox(tmp_path: Path) -> None:
    dirs = TenantDirs.of(tmp_path, "alice").ensure()
    dirs.inbox.mkdir(parents=True)
    secret = tmp_path / "secret.ogg"
    secret.write_bytes(ogg_opus({"TRANSCRIPT": "secret"}))
    link = dirs.inbox / "voice-link.ogg"
    link.symlink_to(secret)
    heard: list[bytes] = []

    async def transcribe(data: bytes, name: str, mime: str) -> Heard:
        heard.append(data)
        return Heard("words")

    audit = MemoryAudit()
    sense = VoiceSense(transcribe, VoiceLimits(), audit)
    for path in (link, secret):
        att = Attachment("voice", str(path), "audio/ogg", size=10, duration_s=1)
        got = await sense.handle(att, Ctx(dirs))
        assert got.refusal.startswith("🎙 I could not fetch that audio")
    assert heard == [] and secret.exists()  # outside the inbox: never read, never removed
    assert not link.is_symlink()  # the link in the inbox is removed, its target kept
    odd = dirs.inbox / "voice-1.audio"
    odd.write_bytes(b"MThd midi")
    att = Attachment("audio", str(odd), "audio/midi", size=9, duration_s=1)
    got = await sense.handle(att, Ctx(dirs))
    assert "cannot transcribe this audio format" in got.refusal and "mp3" in got.refusal
    assert [d["outcome"] for _, _, d in audit.events] == ["failed", "failed", "unsupported"]


async def test_fake_bot_api_voice_limits_through_ptb(monkeypatch: pytest.MonkeyPatch) -> None:
    # as the Telegram channel opts in (it is not made here: run alone, this test failed
    # on PTB's deprecation warning for durations as int)
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    async with FakeBotAPI(TOKEN) as fake:
        bot = Bot(TOKEN, base_url=fake.base_url, base_file_url=fake.base_url[:-3] + "file/bot")
        async with bot:
            big = fake.add_file(b"\0" * (20 * 1024 * 1024 + 1))
            with pytest.raises(BadRequest, match=r"(?i)file is too big"):
                await bot.get_file(big)
            small = fake.add_file(b"OggS tiny")
            got = await bot.get_file(small)
            assert bytes(await got.download_as_bytearray()) == b"OggS tiny"
            with pytest.raises(BadRequest, match=r"(?i)ogg/opus"):
                await bot.send_voice(111, b"ID3 an mp3", filename="a.ogg")
            msg = await bot.send_voice(111, ogg_opus(seconds=3), filename="a.ogg")
            assert msg.voice is not None and msg.voice.duration.total_seconds() == 3
        assert len(fake.voices_to(111)) == 1
