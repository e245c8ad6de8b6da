"""What an uploaded file really is, read from its bytes, never from the client's word.

Pure, no I/O. `Sniffer` is fed the body chunk by chunk while it streams to
disk and then says what it saw: an image (PNG, JPEG, GIF, WebP), a PDF,
audio (WebM, Ogg, MP3, WAV, M4A) by their magic numbers, or text (the whole
body text by the rule every channel shares, `bridge.senses.text_encoding`:
UTF-8, UTF-16 with a BOM, or Windows-1252 that is mostly printable;
Markdown, CSV or JSON by the file name's suffix, plain text otherwise).
Anything else is `None`: refused. The name and the `Content-Type` a
browser sends choose nothing but the flavour of text, so a `.png` that
holds HTML is plain text, never an image or a page.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.senses.text_encoding import TextSniff
from bridge.types.messages import AttachmentKind

HEAD = 64  # bytes of the body the magic numbers are read from
SUPPORTED = (
    "images (PNG, JPEG, WebP, GIF), PDF, text (plain, Markdown, CSV, JSON) "
    "and audio (WebM, Ogg, MP3, WAV, M4A)"
)
M4A_BRANDS = frozenset({b"M4A ", b"M4B ", b"mp41", b"mp42", b"isom", b"iso2", b"iso5", b"dash"})
TEXT_SUFFIXES = {
    "md": ("text/markdown", "md"),
    "markdown": ("text/markdown", "md"),
    "csv": ("text/csv", "csv"),
    "json": ("application/json", "json"),
}


@dataclass(frozen=True, slots=True)
class Sniffed:
    """What a file is: the attachment kind, its MIME type and the suffix it is stored under."""

    kind: AttachmentKind
    mime: str
    ext: str


def _riff(head: bytes) -> Sniffed | None:
    form = head[8:12]
    if form == b"WEBP":
        return Sniffed("photo", "image/webp", "webp")
    if form == b"WAVE":
        return Sniffed("audio", "audio/wav", "wav")
    return None


def _mp3(head: bytes) -> bool:
    """An ID3 tag or an MPEG Layer III frame header (sync bits, a known version,
    a valid bitrate and sample rate); `FF FE`, a UTF-16 byte order mark, is none."""
    if head.startswith(b"ID3"):  # then the version: 2, 3 or 4 (binary, never text)
        return len(head) > 3 and head[3] in (2, 3, 4)
    if len(head) < 3 or head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return False
    version, layer = (head[1] >> 3) & 3, (head[1] >> 1) & 3
    bitrate, rate = head[2] >> 4, (head[2] >> 2) & 3
    return version != 1 and layer == 1 and bitrate not in (0, 15) and rate != 3


def sniff_binary(head: bytes) -> Sniffed | None:
    """The binary type the first bytes announce, or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return Sniffed("photo", "image/png", "png")
    if head.startswith(b"\xff\xd8\xff"):
        return Sniffed("photo", "image/jpeg", "jpg")
    if head.startswith((b"GIF87a", b"GIF89a")):
        return Sniffed("photo", "image/gif", "gif")
    if head.startswith(b"RIFF"):
        return _riff(head)
    if head.startswith(b"%PDF-"):
        return Sniffed("document", "application/pdf", "pdf")
    if head.startswith(b"\x1a\x45\xdf\xa3") and b"webm" in head:  # EBML, DocType webm
        return Sniffed("audio", "audio/webm", "webm")
    if head.startswith(b"OggS"):
        return Sniffed("audio", "audio/ogg", "ogg")
    if head[4:8] == b"ftyp" and head[8:12] in M4A_BRANDS:
        return Sniffed("audio", "audio/mp4", "m4a")
    if _mp3(head):
        return Sniffed("audio", "audio/mpeg", "mp3")
    return None


def text_type(name: str) -> Sniffed:
    """The flavour of a text file, by the suffix of the name it was sent under."""
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    mime, ext = TEXT_SUFFIXES.get(suffix, ("text/plain", "txt"))
    return Sniffed("document", mime, ext)


class Sniffer:
    """Fed every chunk of a body in order; `result(name)` says what the body was."""

    def __init__(self) -> None:
        self.head = b""
        self._text = TextSniff()
        self.size = 0

    def feed(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if len(self.head) < HEAD:
            self.head += chunk[: HEAD - len(self.head)]
        self._text.feed(chunk)

    def _is_text(self) -> bool:
        return self._text.encoding() is not None

    def result(self, name: str) -> Sniffed | None:
        """The file's type (binary magic first, then text), or None when unsupported."""
        found = sniff_binary(self.head)
        if found is not None:
            return found
        return text_type(name) if self._is_text() else None
