"""Voice and files through Synapse's media repository, in and out.

A voice message (`m.audio` marked `org.matrix.msc3245.voice`, uploaded by
the person) is downloaded through the authenticated media API, transcribed
by the fake OpenAI-compatible server and answered; after `/voice on` the
answer also goes out as a voice message; `/export` hands out a zip that
arrives as `m.file`, and the person downloads the very bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_openai import FakeOpenAI, Text, last_user_text
from tests.fakes.ogg_opus import ogg_opus, read_ogg_opus
from tests.matrix.conftest import Accounts, mx_settings, running
from tests.matrix.person import Person
from tests.matrix.synapse_server import Synapse
from tests.matrix.test_chat import dm_with_bot

KEY = "sk-matrix-voice-0123456789"


def answer_of(body: dict[str, Any]) -> Text:
    return Text("You said: " + last_user_text(body).split("\n")[-1])


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, responder=answer_of) as server:
        yield server


async def download(person: Person, mxc: str) -> bytes:
    server, _, media = mxc.removeprefix("mxc://").partition("/")
    url = f"{person.url}/_matrix/client/v1/media/download/{server}/{media}"
    async with person.session.get(url) as resp:
        assert resp.status == 200
        return await resp.read()


async def test_voice_in_voice_out_and_a_file_out(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person, model: FakeOpenAI
) -> None:
    bot = accounts.bot.user_id
    llm = {"base_url": model.base_url, "api_key": KEY, "model": "m"}
    settings = mx_settings(home, synapse, accounts, llm=llm)
    note = ogg_opus({"TRANSCRIPT": "remind me to water the basil"}, seconds=3)
    async with running(settings, configured=True) as r:
        room = await dm_with_bot(alice, bot)
        uri = await alice.upload(note, "audio/ogg", "voice.ogg")
        voice = {
            "msgtype": "m.audio",
            "body": "Voice message",
            "url": uri,
            "info": {"mimetype": "audio/ogg", "size": len(note), "duration": 3000},
            "org.matrix.msc1767.audio": {"duration": 3000},
            "org.matrix.msc3245.voice": {},
        }
        await alice.send(room, voice)
        await alice.wait(lambda: len(alice.texts(room, bot)) == 1, "the heard answer")
        await alice.say(room, "/voice on")
        await alice.say(room, "Say something nice.")
        await alice.say(room, "/export")
        await alice.wait(
            lambda: any(c["msgtype"] == "m.file" for c in alice.answers(room, bot)), "the file"
        )
        await r.channel.idle()
    shown = alice.answers(room, bot)
    assert shown[0]["body"].startswith("🎙 heard: “remind me to water the basil”")
    assert "water the basil" in last_user_text(model.requests[0])
    (spoken,) = [c for c in shown if c["msgtype"] == "m.audio"]
    assert "org.matrix.msc3245.voice" in spoken and spoken["info"]["mimetype"] == "audio/ogg"
    assert (
        "Say something nice."
        in read_ogg_opus(await download(alice, spoken["url"])).comments["SPOKEN"]
    )
    (file,) = [c for c in shown if c["msgtype"] == "m.file"]
    data = await download(alice, file["url"])
    assert file["body"].endswith(".zip") and data[:2] == b"PK"
    assert file["info"] == {"mimetype": "application/zip", "size": len(data)}
