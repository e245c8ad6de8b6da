"""Files in from WhatsApp: through GET /{media-id} and the download, checked first.

A known person's document reaches the model as text and lies in their inbox
(0600, a generated name); a voice note is transcribed as on Telegram (the
fake OpenAI audio endpoint hears the OGG stream's TRANSCRIPT comment). A
file the media endpoint declares too large is never downloaded; one that
lies about its size is stopped while it streams; a media URL that redirects
off the allowed hosts, or to another port of an allowed host, is refused
without a request to that host; a
stranger's files are never even looked up. Answers go out as voice after
`/voice on`, and a reply's files as documents.
"""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bridge.types.messages import Final, OutFile
from tests.conftest import ScriptedBackend
from tests.fakes.fake_openai import FakeOpenAI, Text, last_user_text
from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.fakes.ogg_opus import ogg_opus, read_ogg_opus
from tests.whatsapp.conftest import ALICE, STRANGER, running, wa_settings

KEY = "sk-whatsapp-voice-0123456789"
CSV = b"item,count\ntea,3\ncoffee,5\n"


def inbox_files(home: Path) -> list[Path]:
    inbox = home / "tenants" / "alice" / "global" / "workspace" / "inbox"
    return (
        sorted(p for p in inbox.iterdir() if not p.name.startswith(".")) if inbox.is_dir() else []
    )


def user_said(backend: ScriptedBackend) -> str:
    content = backend.requests[-1].messages[-1].content
    return content if isinstance(content, str) else str(content)


async def test_a_document_reaches_the_model_and_the_inbox(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend("3 tea, 5 coffee")
    async with running(wa_settings(home, fake), fake, backend) as r:
        await fake.document(ALICE, CSV, "stock.csv", "text/csv", caption="what is in stock?")
        await r.channel.idle()
    said = user_said(backend)
    assert "coffee,5" in said and "what is in stock?" in said
    (stored,) = inbox_files(home)
    assert stored.read_bytes() == CSV and stored.suffix == ".csv" and stored.name != "stock.csv"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert fake.texts() == ["3 tea, 5 coffee"]


async def test_a_file_declared_too_large_is_never_downloaded(
    home: Path, fake: FakeWhatsApp
) -> None:
    settings = wa_settings(home, fake, limits={"attachment_bytes": 4096})
    backend = ScriptedBackend("never")
    async with running(settings, fake, backend) as r:
        await fake.document(ALICE, b"x" * 5000, "big.txt", "text/plain")
        await r.channel.idle()
    assert fake.downloads == 0 and inbox_files(home) == [] and backend.requests == []
    (told,) = fake.texts()
    assert "big.txt" in told and "smaller" in told


async def test_a_file_that_lies_about_its_size_is_stopped(home: Path, fake: FakeWhatsApp) -> None:
    settings = wa_settings(home, fake, limits={"attachment_bytes": 4096})
    async with running(settings, fake, ScriptedBackend("never")) as r:
        await fake.document(ALICE, b"y" * 500_000, "lie.txt", "text/plain", declared_size=10)
        await r.channel.idle()
    assert inbox_files(home) == [] and r.channel.fetcher.refused == 1
    assert "lie.txt" in fake.texts()[0]


@pytest.mark.parametrize(
    "target",
    [
        "http://evil.example/steal",
        "http://127.0.0.2:9/x",
        "https://lookaside.fbsbx.com.evil.example/x",
    ],
)
async def test_a_media_url_redirecting_off_the_graph_hosts_is_refused(
    home: Path, fake: FakeWhatsApp, target: str
) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend("never")) as r:
        await fake.document(ALICE, CSV, "a.csv", "text/csv", redirect_to=target)
        await r.channel.idle()
    assert r.channel.fetcher.refused == 1 and inbox_files(home) == []
    assert "could not be received" in fake.texts()[0]


@pytest.fixture
async def trap() -> AsyncIterator[tuple[int, list[str]]]:
    """A server on another port of localhost that notes every request and its token."""
    seen: list[str] = []

    async def note(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.Response(body=CSV)

    app = web.Application()
    app.router.add_get("/{tail:.*}", note)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield port, seen
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_a_media_host_on_another_port_is_refused(
    home: Path, fake: FakeWhatsApp, trap: tuple[int, list[str]], scheme: str
) -> None:
    port, seen = trap
    settings = wa_settings(home, fake, whatsapp={"media_hosts": ["localhost"]})
    async with running(settings, fake, ScriptedBackend("never")) as r:
        target = f"{scheme}://localhost:{port}/steal"
        await fake.document(ALICE, CSV, "a.csv", "text/csv", redirect_to=target)
        await r.channel.idle()
        assert r.channel.fetcher.allowed("https://localhost/x")  # its own port, 443
        assert not r.channel.fetcher.allowed(f"http://127.0.0.1:{port}/x")
    assert seen == [], "the access token went to another port"
    assert r.channel.fetcher.refused == 1 and inbox_files(home) == []


async def test_a_redirect_within_the_api_host_is_followed(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend("ok")
    async with running(wa_settings(home, fake), fake, backend) as r:
        real, _ = fake.add_media(CSV, "text/csv")
        await fake.document(
            ALICE,
            b"",
            "a.csv",
            "text/csv",
            redirect_to=f"http://127.0.0.1:{fake.port}/media/{real}",
        )
        await r.channel.idle()
    assert "coffee,5" in user_said(backend)


async def test_a_strangers_file_is_never_looked_up(home: Path, fake: FakeWhatsApp) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend("never")) as r:
        await fake.document(STRANGER, CSV, "a.csv", "text/csv")
        await r.channel.idle()
    assert fake.calls == 1, "only the refusal was sent: no GET /{media-id}"
    assert fake.downloads == 0


def answer_of(body: dict[str, Any]) -> Text:
    return Text("You said: " + last_user_text(body).split("\n")[-1])


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, responder=answer_of) as server:
        yield server


def voiced(home: Path, fake: FakeWhatsApp, model: FakeOpenAI) -> Any:
    llm = {"base_url": model.base_url, "api_key": KEY, "model": "m"}
    return wa_settings(home, fake, llm=llm)


async def test_a_voice_note_is_transcribed_and_answered(
    home: Path, fake: FakeWhatsApp, model: FakeOpenAI
) -> None:
    note = ogg_opus({"TRANSCRIPT": "remind me to water the basil"}, seconds=3)
    async with running(voiced(home, fake, model), fake, configured=True) as r:
        await fake.voice(ALICE, note)
        await r.channel.idle()
    (answer,) = fake.texts()
    assert answer.startswith("🎙 heard: “remind me to water the basil”")
    assert "water the basil" in last_user_text(model.requests[-1])
    assert model.audio.requests[0].filename.endswith(".ogg")  # type: ignore[union-attr]


async def test_after_voice_on_answers_are_also_voice_messages(
    home: Path, fake: FakeWhatsApp, model: FakeOpenAI
) -> None:
    async with running(voiced(home, fake, model), fake, configured=True) as r:
        await fake.text(ALICE, "/voice on")
        await fake.text(ALICE, "Say something nice.")
        await r.channel.idle()
    on, answer = fake.texts()
    assert on == "🔊 Answers in this chat are now also spoken."
    assert answer.startswith("You said:")
    (voice,) = [m for m in fake.sent if m["type"] == "audio"]
    name, mime, data = fake.uploads[-1]
    assert voice["audio"]["id"] and mime == "audio/ogg" and name == "answer.ogg"
    assert "Say something nice." in read_ogg_opus(data).comments["SPOKEN"]


async def test_a_replys_files_go_out_as_documents(home: Path, fake: FakeWhatsApp) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend()) as r:
        await fake.text(ALICE, "/export")
        await r.channel.idle()
    (doc,) = [m for m in fake.sent if m["type"] == "document"]
    name, mime, data = fake.uploads[-1]
    assert doc["document"]["filename"] == name and name.endswith(".zip")
    assert mime == "application/zip" and data[:2] == b"PK"


def test_outfile_shape_is_what_send_reads() -> None:
    final = Final("x", "answer", (OutFile(Path("/tmp/a"), "a.txt", "text/plain"),))
    assert final.files[0].name == "a.txt"
