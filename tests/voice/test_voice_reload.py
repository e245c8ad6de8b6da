"""The voice keeps the audio servers it started with; a reload that changes them says a
restart applies them (README: [llm] applies at once, its audio servers after a restart)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bridge.app.build import build
from bridge.app.live import reload_hooks
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit

SERVER = {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-test-0000", "model": "m"}


async def test_a_reload_that_changes_an_audio_server_asks_for_a_restart(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = load_settings(llm=SERVER)
    roost = await build(settings, audit=MemoryAudit())
    try:
        assert roost.voice.speaker is not None  # speech defaults to the [llm] server
        hooks = reload_hooks(roost)

        def reload(new_llm: dict[str, object]) -> list[str]:
            caplog.clear()
            new = load_settings(llm=new_llm)
            with caplog.at_level(logging.WARNING, logger="roost"):
                for hook in hooks:
                    hook.apply(new)
            return [r.getMessage() for r in caplog.records if "audio servers" in r.getMessage()]

        assert reload(SERVER | {"max_steps": 3}) == []  # nothing of the voice changed
        (said,) = reload(SERVER | {"speech": {"voice": "nova", "model": "tts-2"}})
        assert "applied only after a restart" in said
        assert reload({**SERVER, "base_url": "http://127.0.0.1:10/v1"}) != []
    finally:
        await roost.aclose()
