"""A reload applies the voice's audio servers, like the rest of `[llm]` (README: reload).

Until session 29 the voice kept the servers it started with and a WARNING asked for a
restart. Now `Voice.reload` makes new clients: a voice note sent after a reload that set
a transcription server is transcribed by it, `/voice on` finds the speech server, and a
reload that takes the servers away says so again. Through the real Telegram channel,
the fake Bot API and the fake model server's audio endpoints.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bridge.app.live import reload_hooks
from bridge.core.config import Settings, load_settings
from bridge.senses.voice import NOT_CONFIGURED
from tests.fakes.ogg_opus import ogg_opus
from tests.telegram.conftest import ALICE, TOKEN
from tests.voice.conftest import KEY, Voiced, voiced


def reloaded(v: Voiced, home: Path, llm: dict[str, object]) -> Settings:
    new = load_settings(
        home=home,
        llm=llm,
        telegram={"token": TOKEN, "api_base_url": v.bot.base_url},
        tenants={"alice": {"telegram_ids": [ALICE]}},
    )
    for hook in reload_hooks(v.roost):
        hook.apply(new)
    return new


def shown(v: Voiced) -> list[str]:
    return [m.text for m in v.bot.sent_to(ALICE)]


async def test_a_reload_sets_and_takes_away_the_audio_servers(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with voiced(home, llm={"provider": "offline"}) as v:
        v.bot.push_voice(ALICE, ogg_opus({"TRANSCRIPT": "hi"}), duration=2)
        await v.bot.wait_until(lambda: len(shown(v)) >= 1)
        assert shown(v) == [NOT_CONFIGURED]

        served = {"base_url": v.model.base_url, "api_key": KEY, "model": "m"}
        with caplog.at_level(logging.INFO, logger="roost"):
            reloaded(v, home, served)
        assert any("transcription on, speech on" in r.getMessage() for r in caplog.records)
        v.bot.push_voice(ALICE, ogg_opus({"TRANSCRIPT": "water the basil"}), duration=2)
        await v.bot.wait_until(lambda: len(shown(v)) >= 2)
        assert shown(v)[1].endswith("Sure. You said: water the basil")
        assert len(v.model.audio.of("transcriptions")) == 1
        v.bot.push_text(ALICE, "/voice on")
        await v.bot.wait_until(lambda: len(shown(v)) >= 3)
        assert "speech server" not in shown(v)[2]

        caplog.clear()
        with caplog.at_level(logging.INFO, logger="roost"):
            reloaded(v, home, {"provider": "offline"})
        assert any("transcription off, speech off" in r.getMessage() for r in caplog.records)
        v.bot.push_voice(ALICE, ogg_opus({"TRANSCRIPT": "again"}), duration=2)
        await v.bot.wait_until(lambda: len(shown(v)) >= 4)
        assert shown(v)[3] == NOT_CONFIGURED
        assert len(v.model.audio.of("transcriptions")) == 1


async def test_a_reload_that_changes_nothing_of_the_voice_says_nothing(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with voiced(home) as v:
        llm = {"base_url": v.model.base_url, "api_key": KEY, "model": "m", "max_steps": 3}
        before = v.roost.voice.transcriber
        with caplog.at_level(logging.INFO, logger="roost"):
            reloaded(v, home, llm)
        assert v.roost.voice.transcriber is before  # the same client, its session kept
        assert not [r for r in caplog.records if "audio servers" in r.getMessage()]
