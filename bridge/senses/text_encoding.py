"""Whether a file's bytes are text, and in which encoding: one rule for every channel.

Pure, standard library only (the decoder process imports it before it is
confined). The rule, in order:

- starts with a UTF-16 byte order mark (`FF FE` or `FE FF`, as Windows
  Notepad and Excel's "Unicode text" write): text when the rest decodes as
  UTF-16 without error, holds no U+0000 and is mostly printable;
- any NUL byte otherwise: not text (a program, an image, an archive...);
- valid UTF-8 (a BOM or not): text, as it always was;
- otherwise text that is mostly printable: read as UTF-8 where its bytes are
  valid UTF-8 and each other byte as Windows-1252 (its five undefined bytes as
  Latin-1). A file with no valid UTF-8 beyond ASCII is Windows-1252 throughout
  (what Excel's "CSV" writes on a German or French Windows); one with both
  (a stray Latin-1 byte in a UTF-8 file, a character cut at the end, lines
  pasted from two editors) keeps every UTF-8 character as written, so a
  name or a secret in it reads the same as anywhere else, and the count of
  bytes read as Windows-1252 is said (`Decoded.legacy`). Except: when each UTF-8
  character in it is one a Windows-1252 letter Ô..ß and a following symbol make
  (U+0500-U+07FF: "ß“" reads as N'Ko) and there are no more of them than bytes that
  are not UTF-8, the file is Windows-1252 throughout (`legacy_throughout`).

"Mostly printable": fewer than one in `ODD_SHARE` characters of the text so
read is a control or private-use character other than tab, line feed,
vertical tab, form feed, carriage return and escape. Random bytes hold about
one in ten; Japanese or Russian UTF-8 none (their continuation bytes are no
controls once read as UTF-8).
`TextSniff` is fed a body chunk by chunk (the web upload and the terminal's
`/attach` stream it; `documents.kind_of` feeds the first 64 KB of a Telegram
document); `decode(data)` reads a whole file by the same rule. Both count with
C-level string operations only (a 20 MB upload is counted in one pass).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from bridge.types.cp1252 import CP1252_TABLE, read_1252

ODD_SHARE = 32  # fewer than 1 in 32 characters may be control characters
BOMS_16 = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_ODD_CHARS = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f\ue000-\uf8ff\ufffe\uffff]")
# UTF-8's broken bytes as `surrogateescape` leaves them (U+DC80-U+DCFF): as Windows-1252
_ESCAPED = re.compile("[\udc80-\udcff]")
_FROM_ESCAPED = {0xDC00 + b: CP1252_TABLE[b] for b in range(0x80, 0x100)}
NAMES = {"utf-8": "UTF-8", "utf-16": "UTF-16", "cp1252": "Windows-1252"}
# A Windows-1252 letter Ô..ß (D4-DF) before a symbol or punctuation mark (80-BF: “ ” – …
# § ° NBSP) is valid UTF-8: one character U+0500-U+07FF (Armenian, Hebrew, Arabic, Syriac,
# Thaana, N'Ko); any other character beyond ASCII is no such pair.
_UNPAIRED = re.compile("[\u0080-\u04ff\u0800-\U0010ffff]")


def odd_chars(text: str) -> int:
    """How many characters of `text` are control or private-use characters."""
    return len(text) - len(_ODD_CHARS.sub("", text))


def mostly_printable(odd: int, total: int) -> bool:
    return odd * ODD_SHARE < total


@dataclass(frozen=True, slots=True)
class Mixed:
    """Bytes read by the 8-bit rule: UTF-8 where valid, each other byte as Windows-1252."""

    text: str
    legacy: int  # bytes read as Windows-1252
    wide: int  # characters beyond ASCII read as UTF-8
    unpaired: bool = False  # one of them is no Windows-1252 letter-and-symbol pair


def read_mixed(escaped: str) -> Mixed:
    """`escaped` (UTF-8 decoded with `surrogateescape`) with its escaped bytes read as
    Windows-1252; ASCII text is passed through as it is."""
    if escaped.isascii():
        return Mixed(escaped, 0, 0)
    plain = _ESCAPED.sub("", escaped)
    legacy = len(escaped) - len(plain)
    wide = len(plain) - len(plain.encode("ascii", "ignore"))
    text = escaped.translate(_FROM_ESCAPED) if legacy else escaped
    return Mixed(text, legacy, wide, bool(wide) and _UNPAIRED.search(plain) is not None)


def legacy_throughout(legacy: int, wide: int, unpaired: bool) -> bool:
    """Whether bytes that are not all UTF-8 are Windows-1252 throughout: no UTF-8 beyond
    ASCII, or only characters a Windows-1252 letter and symbol make (`_UNPAIRED`) and no more
    of them than bytes that are not UTF-8 ("Fuß“" in a German file)."""
    return legacy > 0 and (wide == 0 or (not unpaired and wide <= legacy))


class TextSniff:
    """Fed a body's bytes in order; `encoding()` is what it reads as, or None: not text."""

    def __init__(self) -> None:
        self.size = 0
        self._start = b""  # the first two bytes, until the mode is known
        self._mode = ""  # "", "utf-16" or "8bit"
        self._utf8 = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._utf16 = codecs.getincrementaldecoder("utf-16")()
        self._legacy = self._wide = 0
        self._unpaired = False
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
            self._feed_8bit(chunk, final=False)

    def _feed_16(self, chunk: bytes, final: bool) -> None:
        try:
            text = self._utf16.decode(chunk, final)
        except UnicodeDecodeError:
            self._bad = True
            return
        self._bad = "\x00" in text
        self._count(text)

    def _feed_8bit(self, chunk: bytes, final: bool) -> None:
        if b"\x00" in chunk:
            self._bad = True
            return
        mixed = read_mixed(self._utf8.decode(chunk, final))
        self._legacy += mixed.legacy
        self._wide += mixed.wide
        self._unpaired = self._unpaired or mixed.unpaired
        self._count(mixed.text)

    def _count(self, text: str) -> None:
        self._odd += odd_chars(text)
        self._chars += len(text)

    def encoding(self, final: bool = True) -> str | None:
        """ "utf-8", "utf-16" or "cp1252", or None when the body is not text.

        `final`: the whole body was fed (else only its start: a character cut
        at the end is no reason to refuse). Called with `final` once, last."""
        if not self._mode and self._start and not self._bad:  # a body of one byte
            self._mode = "8bit"
            self._feed_8bit(self._start, final=False)
        if self._bad or self.size == 0:
            return None
        if self._mode == "utf-16":
            if final:
                self._feed_16(b"", final=True)  # an odd byte or half a pair at the end
            ok = not self._bad and mostly_printable(self._odd, self._chars)
            return "utf-16" if ok else None
        if final:
            self._feed_8bit(b"", final=True)  # a sequence cut at the end: its bytes
        if not mostly_printable(self._odd, self._chars):
            return None
        return "cp1252" if legacy_throughout(self._legacy, self._wide, self._unpaired) else "utf-8"


@dataclass(frozen=True, slots=True)
class Decoded:
    """A text file's characters (a byte order mark dropped) and the encoding they were in."""

    text: str
    encoding: str  # "utf-8", "utf-16" or "cp1252"
    legacy: int = 0  # a UTF-8 file's bytes that were not UTF-8, read as Windows-1252

    @property
    def shown(self) -> str:
        """The encoding's name for people: "UTF-8", "UTF-16", "Windows-1252" (and the
        bytes read as Windows-1252 in a UTF-8 file, when some were)."""
        if self.legacy:
            some = "1 byte" if self.legacy == 1 else f"{self.legacy} bytes"
            return f"UTF-8 ({some} not UTF-8, read as Windows-1252)"
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
    mixed = read_mixed(data.decode("utf-8", "surrogateescape"))
    if not mostly_printable(odd_chars(mixed.text), len(mixed.text)):
        return None
    if legacy_throughout(mixed.legacy, mixed.wide, mixed.unpaired):
        return Decoded(read_1252(data) if mixed.wide else mixed.text, "cp1252")
    return Decoded(mixed.text.removeprefix("\ufeff"), "utf-8", mixed.legacy)
