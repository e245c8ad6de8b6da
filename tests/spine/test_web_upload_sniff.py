"""The upload's pure parts and its waiting list: type sniffing, display names, expiry.

The sniffer is fed bodies the way the route feeds it (in chunks that split
anywhere); the waiting list runs as the real route on an aiohttp server
with an injected clock.
"""

from __future__ import annotations

import struct
import wave
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bridge.channels.common.sniff import Sniffed, Sniffer
from bridge.channels.web.gate import WebGate
from bridge.channels.web.upload import MAX_PENDING, UploadError, WebUploads, display_name
from tests.conftest import Clock
from tests.spine.test_web_upload import png

TOKEN = "sniff-token-0123456789abcdef"


def sniff(body: bytes, name: str = "x", chunk: int = 7) -> Sniffed | None:
    s = Sniffer()
    for start in range(0, len(body), chunk):
        s.feed(body[start : start + chunk])
    return s.result(name)


def wav_bytes(tmp_path: Path) -> bytes:
    with wave.open(str(tmp_path / "a.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x00\x00" * 160)
    return (tmp_path / "a.wav").read_bytes()


EBML_WEBM = bytes.fromhex("1a45dfa39f4286810142f7810142f2810442f381084282847765626d42878104")
HEADS = {
    "jpeg": (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 20, ("photo", "image/jpeg")),
    "gif": (b"GIF89a\x01\x00\x01\x00\x80\x00\x00", ("photo", "image/gif")),
    "webp": (b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 20, ("photo", "image/webp")),
    "pdf": (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", ("document", "application/pdf")),
    "webm": (EBML_WEBM + b"\x18\x53\x80\x67" + b"\x01" * 30, ("audio", "audio/webm")),
    "ogg": (b"OggS\x00\x02" + b"\x00" * 20 + b"\x01\x1eOpusHead", ("audio", "audio/ogg")),
    "mp3 id3": (b"ID3\x04\x00\x00\x00\x00\x00\x21" + b"\x00" * 40, ("audio", "audio/mpeg")),
    "mp3 frame": (b"\xff\xfb\x90\x64" + b"\x00" * 40, ("audio", "audio/mpeg")),
    "m4a": (
        struct.pack(">I", 32) + b"ftypM4A \x00\x00\x02\x00" + b"\x00" * 16,
        ("audio", "audio/mp4"),
    ),
}


@pytest.mark.parametrize("which", sorted(HEADS))
def test_binary_types_are_known_by_their_magic_numbers(which: str) -> None:
    body, want = HEADS[which]
    found = sniff(body, "named.txt")
    assert found is not None and (found.kind, found.mime) == want


def test_a_png_a_wav_and_text_flavours(tmp_path: Path) -> None:
    assert sniff(png(), "a.txt") == Sniffed("photo", "image/png", "png")
    assert sniff(wav_bytes(tmp_path), "a.png") == Sniffed("audio", "audio/wav", "wav")
    text = "Grüße, 😀 — ein Brief\n".encode() * 50  # multi-byte characters cut by chunks
    assert sniff(text, "brief.md", chunk=5) == Sniffed("document", "text/markdown", "md")
    assert sniff(text, "brief.json") == Sniffed("document", "application/json", "json")
    assert sniff(text, "brief.html") == Sniffed("document", "text/plain", "txt")
    assert sniff(text, "no-suffix") == Sniffed("document", "text/plain", "txt")
    # not UTF-8: UTF-16 with a BOM (not an MP3 frame), else Windows-1252 (tests/senses)
    assert sniff(b"\xff\xfeh\x00i\x00") == Sniffed("document", "text/plain", "txt")
    assert sniff("cut: ü".encode()[:-1]) == Sniffed("document", "text/plain", "txt")


def test_what_is_refused() -> None:
    assert sniff(b"") is None
    assert sniff(b"plain until a \x00 NUL byte") is None
    assert sniff(b"\xff\xfe\x00\xd8x\x00") is None  # UTF-16 with a lone surrogate
    assert sniff(b"\xff\xfe" + bytes(range(1, 256)) * 4) is None  # a BOM, then binary
    assert sniff(b"MZ\x90\x00\x03" + bytes(range(200))) is None  # a Windows program
    assert sniff(b"RIFF\x24\x00\x00\x00AVI LIST") is None
    assert sniff(b"\x1a\x45\xdf\xa3\x01\x00\x00\x00matroska" + b"\x00" * 40) is None


def test_display_names_are_for_showing_only() -> None:
    assert display_name("../../etc/passwd", "file") == "passwd"
    assert display_name("C:\\Users\\me\\Receipt%20(1).png", "file") == "Receipt (1).png"
    assert display_name("a\r\nb\x00c\u202e.txt", "file") == "abc.txt"
    assert display_name("", "file") == "file" and display_name("../", "file") == "file"
    assert len(display_name("x" * 500 + ".txt", "file")) == 120


@pytest.fixture
async def waiting(tmp_path: Path) -> AsyncIterator[tuple[aiohttp.ClientSession, WebUploads, Clock]]:
    clock = Clock()
    uploads = WebUploads(
        WebGate({TOKEN: "local"}, "local"), lambda t: tmp_path / t / "inbox", 1000, clock=clock
    )
    app = web.Application()
    uploads.mount(app)
    async with TestServer(app) as server, aiohttp.ClientSession(str(server.make_url(""))) as http:
        yield http, uploads, clock


async def post(http: aiohttp.ClientSession, text: str) -> tuple[int, dict[str, str]]:
    form = aiohttp.FormData()
    form.add_field("file", text.encode(), filename="n.txt", content_type="text/plain")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with http.post("/api/upload", data=form, headers=headers) as r:
        return r.status, await r.json()


async def test_an_upload_no_message_claims_is_deleted_after_an_hour(
    waiting: tuple[aiohttp.ClientSession, WebUploads, Clock], tmp_path: Path
) -> None:
    http, uploads, clock = waiting
    _, kept = await post(http, "kept")
    _, late = await post(http, "too late")
    inbox = tmp_path / "local" / "inbox"
    assert len(list(inbox.iterdir())) == 2
    (attachment,) = uploads.claim("local", [kept["id"]])
    clock.advance(3601)
    with pytest.raises(UploadError, match="no upload"):
        uploads.claim("local", [late["id"]])
    assert [p.name for p in inbox.iterdir()] == [Path(attachment.path).name]  # claimed: stays
    with pytest.raises(UploadError, match="at most 10"):
        uploads.claim("local", [f"{i:032x}" for i in range(11)])


async def test_at_most_so_many_uploads_wait(
    waiting: tuple[aiohttp.ClientSession, WebUploads, Clock],
) -> None:
    http, _, clock = waiting
    for i in range(MAX_PENDING):
        assert (await post(http, f"n{i}"))[0] == 200
    status, body = await post(http, "one more")
    assert status == 429 and "send one first" in body["error"]
    clock.advance(3601)  # the waiting ones expired: room again
    assert (await post(http, "now"))[0] == 200
