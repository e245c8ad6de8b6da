"""Spoken answers on the web page: after `/voice on` each answer comes with a one-time
signed link to its voice (OGG/Opus from the fake speech server of tests/fakes), which
the page plays. A real web channel over a socket, a real core, the fake OpenAI server
with its audio endpoints (`[llm.speech]` defaults to the [llm] server).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.fake_openai import Status
from tests.fakes.ogg_opus import read_ogg_opus
from tests.spine.test_web_chats import served
from tests.spine.test_web_history import AS_ALICE, AS_BOB, Site, get


async def say(site: Site, text: str, auth: dict[str, str] = AS_ALICE) -> dict[str, Any]:
    async with site.http.post("/api/chat", json={"chat": "c", "text": text}, headers=auth) as r:
        assert r.status == 200, await r.text()
        return dict(await r.json())


async def test_voice_on_makes_the_page_play_each_answer(home: Path) -> None:
    async with served(home) as site:
        plain = await say(site, "before voice")
        assert "files" not in plain
        on = await say(site, "/voice on")
        assert "the page plays each one" in on["reply"]
        _, status = await get(site, "/api/status?chat=c")
        assert status["speech"] == {"configured": True, "on": True}

        reply = await say(site, "hello there")
        [voice] = reply["files"]
        assert voice["mime"] == "audio/ogg" and voice["url"].startswith("/files/")
        async with site.http.get(voice["url"]) as r:  # the link is the credential
            assert r.status == 200 and r.headers["Content-Type"] == "audio/ogg"
            heard = read_ogg_opus(await r.read())
        assert heard.comments["SPOKEN"] == "echo: hello there"
        async with site.http.get(voice["url"]) as r:
            assert r.status == 410  # once
        [asked] = site.fake.audio.of("speech")
        assert asked.fields["input"] == "echo: hello there"

        assert "files" not in await say(site, "/status")  # a command is never spoken
        bob = await say(site, "bob here", AS_BOB)  # his chat did not ask for voice
        assert "files" not in bob

        await say(site, "/voice off")
        assert "files" not in await say(site, "quiet again")
        assert len(site.fake.audio.of("speech")) == 1


async def test_a_failed_speech_is_said_and_the_text_stays(home: Path) -> None:
    async with served(home) as site:
        await say(site, "/voice on")
        site.fake.audio.script(Status(400, "speech refused"))
        reply = await say(site, "hello")
        assert "files" not in reply
        assert reply["reply"].startswith("echo: hello\n\n🔇 I could not speak this answer")
