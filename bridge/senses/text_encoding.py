"""Whether a file's bytes are text, and in which encoding: one rule for every channel.

Pure, standard library only (the decoder process imports it before it is
confined). The rule, in order:

- starts with a UTF-16 byte order mark (`FF FE` or `FE FF`, as Windows
  Notepad and Excel's "Unicode text" write): text when the rest decodes as
  UTF-16 without error, holds no U+0000 and is mostly printable;
- any NUL byte otherwise: not text (a program, an image, an archive...);
- valid UTF-8 (a BOM or not): text, as it always was;
- UTF-8 with a few broken sequences (a stray byte, a character cut at the
  end) among more valid non-ASCII characters than broken ones: read as UTF-8,
  each broken sequence as U+FFFD (reading it as Windows-1252 would garble
  every other accented letter), and the count said (`Decoded.replaced`);
- otherwise text that is mostly printable (what Excel's "CSV" writes on a
  German or French Windows): read as Windows-1252, its five undefined
  bytes as Latin-1.

"Mostly printable": fewer than one in `ODD_SHARE` characters (bytes, for
Windows-1252) is a control character other than tab, line feed, vertical tab,
form feed, carriage return and escape. Random bytes hold about one in ten.
`TextSniff` is fed a body chunk by chunk (the web upload and the terminal's
`/attach` stream it; `documents.kind_of` feeds the first 64 KB of a Telegram
document); `decode(data)` reads a whole file by the same rule.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

ODD_SHARE = 32  # fewer than 1 in 32 characters may be control characters
BOMS_16 = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
UNDEFINED_1252 = frozenset({0x81, 0x8D, 0x8F, 0x90, 0x9D})
_FINE_CONTROLS = b"\t\n\x0b\x0c\r\x1b"
PRINTABLE_8BIT = (
    _FINE_CONTROLS
    + bytes(range(0x20, 0x7F))
    + bytes(b for b in range(0x80, 0x100) if b not in UNDEFINED_1252)
)
# Windows-1252, with the five bytes it leaves undefined read as Latin-1 (C1 controls)
CP1252_TABLE = "".join(
    chr(b) if b in UNDEFINED_1252 else bytes([b]).decode("cp1252") for b in range(256)
)
_ODD_CHARS = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f\ue000-\uf8ff\ufffe\uffff]")
NAMES = {"utf-8": "UTF-8", "utf-16": "UTF-16", "cp1252": "Windows-1252"}


def odd_bytes(data: bytes) -> int:
    """How many bytes of `data` are no printable Windows-1252 character."""
    return len(data.translate(None, PRINTABLE_8BIT))


def odd_chars(text: str) -> int:
    """How many characters of `text` are control or private-use characters."""
    return sum(1 for _ in _ODD_CHARS.finditer(text))


def mostly_printable(odd: int, total: int) -> bool:
    return odd * ODD_SHARE < total


class TextSniff:
    """Fed a body's bytes in order; `encoding()` is what it reads as, or None: not text."""

    def __init__(self) -> None:
        self.size = 0
        self._start = b""  # the first two bytes, until the mode is known
        self._mode = ""  # "", "utf-16" or "8bit"
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._utf16 = codecs.getincrementaldecoder("utf-16")()
        self._utf8_ok = True
        self._bad = False  # a NUL byte, or UTF-16 that does not decode
        self._odd = 0
        self._chars = 0

    def feed(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self._bad or not chunk:
            return
        if not self._mode:
            self._start += chunk
            if len(self._start) < 2:
                return
            chunk, self._start = self._start, b""
            self._mode = "utf-16" if chunk.startswith(BOMS_16) else "8bit"
        if self._mode == "utf-16":
            self._feed_16(chunk, final=False)
        else:
            self._feed_8bit(chunk)

    def _feed_16(self, chunk: bytes, final: bool) -> None:
        try:
            text = self._utf16.decode(chunk, final)
        except UnicodeDecodeError:
            self._bad = True
            return
        self._bad = "\x00" in text
        self._odd += odd_chars(text)
        self._chars += len(text)

    def _feed_8bit(self, chunk: bytes) -> None:
        if b"\x00" in chunk:
            self._bad = True
            return
        self._odd += odd_bytes(chunk)
        self._chars += len(chunk)
        if self._utf8_ok:
            try:
                self._utf8.decode(chunk)
            except UnicodeDecodeError:
                self._utf8_ok = False

    def encoding(self, final: bool = True) -> str | None:
        """ "utf-8", "utf-16" or "cp1252", or None when the body is not text.

        `final`: the whole body was fed (else only its start: a character cut
        at the end is no reason to refuse). Called with `final` once, last."""
        if not self._mode and self._start and not self._bad:  # a body of one byte
            self._mode = "8bit"
            self._feed_8bit(self._start)
        if self._bad or self.size == 0:
            return None
        if self._mode == "utf-16":
            if final:
                self._feed_16(b"", final=True)  # an odd byte or half a pair at the end
            ok = not self._bad and mostly_printable(self._odd, self._chars)
            return "utf-16" if ok else None
        if self._utf8_ok and final:
            try:
                self._utf8.decode(b"", final=True)
            except UnicodeDecodeError:
                self._utf8_ok = False
        if self._utf8_ok:
            return "utf-8"
        return "cp1252" if mostly_printable(self._odd, self._chars) else None


@dataclass(frozen=True, slots=True)
class Decoded:
    """A text file's characters (a byte order mark dropped) and the encoding they were in."""

    text: str
    encoding: str  # "utf-8", "utf-16" or "cp1252"
    replaced: int = 0  # UTF-8's broken sequences read as U+FFFD

    @property
    def shown(self) -> str:
        """The encoding's name for people: "UTF-8", "UTF-16", "Windows-1252" (and the
        broken sequences, when some were replaced)."""
        if self.replaced:
            some = "1 byte sequence" if self.replaced == 1 else f"{self.replaced} byte sequences"
            return f"{NAMES[self.encoding]} ({some} not UTF-8, shown as \ufffd)"
        return NAMES[self.encoding]


def decode(data: bytes) -> Decoded | None:
    """The whole file read by the rule above; None when it is not text."""
    if data.startswith(BOMS_16):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            return None
        if "\x00" in text or not mostly_printable(odd_chars(text), len(text)):
            return None
        return Decoded(text, "utf-16")
    if not data or b"\x00" in data:
        return None
    try:
        return Decoded(data.decode("utf-8").removeprefix("\ufeff"), "utf-8")
    except UnicodeDecodeError:
        pass
    if not mostly_printable(odd_bytes(data), len(data)):
        return None
    mended = mostly_utf8(data)
    if mended is not None:
        return mended
    return Decoded(codecs.charmap_decode(data, "strict", CP1252_TABLE)[0], "cp1252")


REPLACEMENT = "\ufffd".encode()


def mostly_utf8(data: bytes) -> Decoded | None:
    """`data` (not valid UTF-8) read as UTF-8 with its broken sequences as U+FFFD, when it
    holds more valid non-ASCII characters than broken sequences; else None."""
    text = data.decode("utf-8", "replace")
    broken = text.count("\ufffd") - data.count(REPLACEMENT)
    wide = sum(1 for ch in text if ch > "\x7f") - text.count("\ufffd")
    if wide <= broken:
        return None
    return Decoded(text.removeprefix("\ufeff"), "utf-8", broken)
