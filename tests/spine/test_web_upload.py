"""Uploads on the web: POST /api/upload, then a chat message that names them.

Everything is real: the web channel over a socket, the core built by
`build` over the fake OpenAI server (tests/fakes/fake_openai.py), SQLite,
files in a temporary ROOST_HOME. The only addition is a recorder around the
core's `handle` so the test can see the `Inbound` the channel made (until
the senses pipeline reads attachments, that is where an upload ends).
"""

from __future__ import annotations

import os
import struct
import wave
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bridge.app.build import Roost, build
from bridge.app.channels_up import web_channel
from bridge.channels.web.channel import WebChannel
from bridge.channels.web.turns import ProgressHandle
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import DeltaSink, Final, Inbound
from bridge.types.progress import ProgressSink
from bridge.types.tenant_dirs import TenantDirs
from tests.fakes.fake_openai import FakeOpenAI, last_user_text

TOKEN = "upload-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef00"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
KEY = "sk-test-key-000000000000"


def png(width: int = 2, height: int = 1) -> bytes:
    """A real, tiny PNG (stdlib only)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    idat = zlib.compress(rows)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


def wav(path: Path, frames: int = 800) -> bytes:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x01" * frames)
    return path.read_bytes()


@dataclass
class Served:
    http: aiohttp.ClientSession
    roost: Roost
    web: WebChannel
    fake: FakeOpenAI
    home: Path
    inbounds: list[Inbound] = field(default_factory=list)

    def inbox(self, tenant: str = "local") -> Path:
        return TenantDirs.of(self.home, tenant).inbox

    async def upload(
        self,
        data: bytes,
        name: str = "file.bin",
        mime: str = "application/octet-stream",
        token: str = TOKEN,
        query: str = "",
    ) -> tuple[int, dict[str, Any]]:
        form = aiohttp.FormData()
        form.add_field("file", data, filename=name, content_type=mime)
        auth = {"Authorization": f"Bearer {token}"}
        async with self.http.post(f"/api/upload{query}", data=form, headers=auth) as r:
            return r.status, dict(await r.json())

    async def chat(self, body: dict[str, Any], token: str = TOKEN) -> tuple[int, dict[str, Any]]:
        auth = {"Authorization": f"Bearer {token}"}
        async with self.http.post("/api/chat", json=body, headers=auth) as r:
            return r.status, dict(await r.json())


def recorder(handle: ProgressHandle, seen: list[Inbound]) -> ProgressHandle:
    async def recorded(
        inbound: Inbound, on_delta: DeltaSink | None, on_progress: ProgressSink | None
    ) -> Final:
        seen.append(inbound)
        return await handle(inbound, on_delta, on_progress)

    return recorded


def configure_bob() -> None:
    """A second tenant with its own web token, in the config file."""
    Path(os.environ["ROOST_CONFIG"]).write_text(f'[tenants.bob]\nweb_token = "{BOB}"\n')


@asynccontextmanager
async def served(
    home: Path, monkeypatch: pytest.MonkeyPatch, limit: int | None = None, factory: bool = False
) -> AsyncIterator[Served]:
    """The web channel over a real roost; `factory`: made by `roost serve`'s own factory
    (no recorder), else made here with the recorder around the core's handle."""
    configure_bob()
    async with FakeOpenAI(api_key=KEY, models=["m1"]) as fake:
        for name, value in {
            "ROOST_WEB__PORT": "0",
            "ROOST_WEB__TOKEN": TOKEN,
            "ROOST_LLM__BASE_URL": fake.base_url,
            "ROOST_LLM__API_KEY": KEY,
            "ROOST_LLM__MODEL": "m1",
        }.items():
            monkeypatch.setenv(name, value)
        if limit is not None:
            monkeypatch.setenv("ROOST_LIMITS__ATTACHMENT_BYTES", str(limit))
        settings = load_settings()
        roost = await build(settings, audit=MemoryAudit())
        seen: list[Inbound] = []
        made = web_channel(settings, roost, {}).channel if factory else None
        if not isinstance(made, WebChannel):
            made = WebChannel(
                recorder(roost.core.handle, seen),
                roost.command_list,
                TOKEN,
                port=0,
                turns=roost.core.running,
                archive=roost.sessions.archive,
                tenant_tokens={BOB: "bob"},
                inbox=lambda tenant: TenantDirs.of(home, tenant).inbox,
                attachment_bytes=settings.limits.attachment_bytes,
            )
        await made.start()
        try:
            async with aiohttp.ClientSession(f"http://127.0.0.1:{made.port}") as http:
                yield Served(http, roost, made, fake, home, seen)
        finally:
            await made.stop()
            await roost.aclose()


def files_in(inbox: Path) -> list[str]:
    return sorted(p.name for p in inbox.iterdir()) if inbox.exists() else []


async def test_a_photo_is_stored_in_the_inbox_and_reaches_the_turn(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = png()
    async with served(home, monkeypatch) as s:
        status, up = await s.upload(image, "../../etc/Receipt 2026.png", "image/png")
        assert status == 200, up
        assert up["kind"] == "photo" and up["mime"] == "image/png"
        assert up["name"] == "Receipt 2026.png" and up["size"] == len(image)
        stored = s.inbox() / f"web-{up['id']}.png"
        assert files_in(s.inbox()) == [stored.name]  # a generated name, no temporary left
        assert stored.read_bytes() == image
        assert stored.stat().st_mode & 0o777 == 0o600

        status, reply = await s.chat(
            {"text": "what is on this receipt?", "attachments": [up["id"]]}
        )
        # the senses pipeline got the photo: this model cannot see, so it says so and
        # asks no model (tests/senses covers a vision model receiving the image)
        assert status == 200 and reply["kind"] == "refusal"
        assert "cannot see images" in reply["reply"] and "/model" in reply["reply"]
        assert s.fake.requests == []
        (att,) = s.inbounds[-1].attachments
        assert (att.kind, att.mime, att.name) == ("photo", "image/png", "Receipt 2026.png")
        assert att.size == len(image)
        assert Path(att.path) == stored and stored.is_file()


async def test_the_stream_route_takes_attachments_too_and_each_upload_only_once(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async with served(home, monkeypatch) as s:
        _, doc = await s.upload(b"# Plan\n\n- one\n- two\n", "plan.md", "text/markdown")
        _, voice = await s.upload(
            wav(tmp_path / "v.wav"), "voice.wav", "audio/wav", query="?voice=1"
        )
        assert (doc["kind"], doc["mime"]) == ("document", "text/markdown")
        assert (voice["kind"], voice["mime"]) == ("voice", "audio/wav")
        body = {"text": "read these", "attachments": [doc["id"], voice["id"]]}
        async with s.http.post("/api/chat/stream", json=body, headers=AUTH) as r:
            assert r.status == 200
            streamed = await r.text()
        # both reached the senses pipeline: the note's transcript was empty (a silent
        # WAV), so the person is told; the document's text went to the model
        assert "could not make out any words" in streamed
        assert "read these" in last_user_text(s.fake.requests[-1])
        assert "- one" in last_user_text(s.fake.requests[-1])
        kinds = [(a.kind, Path(a.path).suffix) for a in s.inbounds[-1].attachments]
        assert kinds == [("document", ".md"), ("voice", ".wav")]
        status, again = await s.chat(body)  # the ids were used by that message
        assert status == 400 and "no upload" in again["error"]
        assert len(s.inbounds) == 1  # the refused message never reached the core


async def test_an_upload_past_the_limit_is_refused_while_it_streams(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with served(home, monkeypatch, limit=40_000, factory=True) as s:
        status, up = await s.upload(b"a" * 40_000, "exact.txt", "text/plain")
        assert status == 200 and up["size"] == 40_000
        status, body = await s.upload(b"a" * 40_001, "over.txt", "text/plain")
        assert status == 413 and "attachment_bytes" in body["error"] and "40,000" in body["error"]

        # no Content-Length (chunked): the count while streaming is what stops it
        boundary = "xyzBOUNDARYxyz"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n'
            "Content-Type: text/plain\r\n\r\n"
        ).encode()

        async def body_parts() -> AsyncIterator[bytes]:
            yield head
            for _ in range(40):
                yield b"b" * 4096
            yield f"\r\n--{boundary}--\r\n".encode()

        headers = AUTH | {"Content-Type": f"multipart/form-data; boundary={boundary}"}
        async with s.http.post("/api/upload", data=body_parts(), headers=headers) as r:
            assert r.status == 413
            assert "too large" in (await r.json())["error"]
        assert files_in(s.inbox()) == [f"web-{up['id']}.txt"]  # nothing of the big ones left


async def test_the_type_comes_from_the_bytes_not_the_name(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = b"<!doctype html><html><script>alert(document.cookie)</script></html>"
    async with served(home, monkeypatch) as s:
        status, up = await s.upload(page, "cat.png", "image/png")
        assert status == 200
        assert (up["kind"], up["mime"]) == ("document", "text/plain")  # text, not an image
        assert files_in(s.inbox()) == [f"web-{up['id']}.txt"]
        for path in (f"/api/upload/{up['id']}", f"/files/web-{up['id']}.txt", "/api/upload"):
            async with s.http.get(path, headers=AUTH) as r:  # nothing serves it back
                assert r.status in (404, 405)
                assert "text/html" not in r.headers.get("Content-Type", "")

        status, up = await s.upload(png(), "notes.txt", "text/plain")
        assert (status, up["kind"], up["mime"]) == (200, "photo", "image/png")

        binary = bytes(range(256)) * 4
        status, body = await s.upload(binary, "report.pdf", "application/pdf")
        assert status == 415 and "PDF" in body["error"] and "WebM" in body["error"]
        status, body = await s.upload(b"\xff\xfe" + "hi".encode("utf-16-le"), "u16.txt")
        assert (status, body["kind"], body["mime"]) == (200, "document", "text/plain")
        status, body = await s.upload(b"", "empty.txt", "text/plain")
        assert status == 415
        status, up = await s.upload(b"a,b\n1,2\n", "t.CSV", "application/octet-stream")
        assert (up["kind"], up["mime"]) == ("document", "text/csv")
        assert len(files_in(s.inbox())) == 4  # the refused ones were removed


async def test_ids_belong_to_the_tenant_that_uploaded(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with served(home, monkeypatch) as s:
        _, mine = await s.upload(b"local's list\n", "list.txt", "text/plain")
        status, bobs = await s.upload(b"bob's list\n", "list.txt", "text/plain", token=BOB)
        assert status == 200
        assert files_in(s.inbox("bob")) == [f"web-{bobs['id']}.txt"]
        assert files_in(s.inbox()) == [f"web-{mine['id']}.txt"]

        status, body = await s.chat({"text": "x", "attachments": [mine["id"]]}, token=BOB)
        assert status == 400 and "no upload" in body["error"]
        status, body = await s.chat({"text": "x", "attachments": ["0" * 32]})
        assert status == 400 and "no upload" in body["error"]
        status, body = await s.chat({"text": "x", "attachments": ["../../etc/passwd"]})
        assert status == 400 and "send JSON like" in body["error"]
        assert s.inbounds == []
        # the refusal took nothing: the owner can still use it
        status, _ = await s.chat({"text": "ok", "attachments": [mine["id"]]})
        assert status == 200 and s.inbounds[-1].attachments[0].path.endswith(".txt")

        async with s.http.post("/api/upload", data=b"{}") as r:
            assert r.status == 401
        async with s.http.post("/api/upload", json={"file": "x"}, headers=AUTH) as r:
            assert r.status == 400 and "multipart" in (await r.json())["error"]


async def test_two_files_in_one_upload_are_refused_and_none_is_kept(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page sends one file per request; a second part used to be dropped unseen while
    the first was kept. Both are refused now, and nothing stays in the inbox."""
    async with served(home, monkeypatch) as s:
        form = aiohttp.FormData()
        form.add_field("file", png(), filename="a.png", content_type="image/png")
        form.add_field("file", png(3, 1), filename="b.png", content_type="image/png")
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with s.http.post("/api/upload", data=form, headers=auth) as r:
            status, body = r.status, await r.json()
        assert status == 400 and "one file per upload" in body["error"]
        assert files_in(s.inbox()) == []
        status, up = await s.upload(png(), "c.png", "image/png")  # one file still goes
        assert status == 200 and files_in(s.inbox()) == [f"web-{up['id']}.png"]
