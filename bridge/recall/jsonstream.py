"""The elements of a top-level JSON array, one at a time, from a file of any size.

`iter_array(stream)` reads the file in chunks and decodes one element at a
time with the standard library's `raw_decode`, so a 1 GB export never sits in
memory: at most one element (one conversation) and one chunk do. When an
element is cut by the chunk's end, more is read — at least as much again as
is buffered, so a large element costs a few decodes, not one per chunk.
`Element.offset` is the bytes consumed so far (the progress bar's measure).
A file that is not an array, whose JSON breaks, that is not UTF-8 or whose
element is nested too deeply to decode raises `BadJson` naming the element's
(or the byte's) position; what came before it has been yielded already.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

CHUNK = 1 << 20
_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


class BadJson(ValueError):
    """The file is not a JSON array, or an element of it is broken."""


@dataclass(frozen=True, slots=True)
class Element:
    index: int  # 0-based position in the array
    value: object
    offset: int  # bytes of the file read so far


class _Buffer:
    def __init__(self, stream: BinaryIO, chunk: int) -> None:
        self.stream, self.chunk = stream, chunk
        self.text, self.pos, self.read_bytes, self.eof = "", 0, 0, False
        self._utf8 = codecs.getincrementaldecoder("utf-8-sig")()

    def more(self, at_least: int = 0) -> bool:
        """Read another chunk (or `at_least` characters' worth); False at the end of the file."""
        if self.eof:
            return False
        self.text = self.text[self.pos :]
        self.pos = 0
        want = max(self.chunk, at_least)
        data = self.stream.read(want)
        self.read_bytes += len(data)
        if not data:
            self.eof = True
            self.text += self._decode(data, final=True)
            return False
        self.text += self._decode(data)
        return True

    def _decode(self, data: bytes, final: bool = False) -> str:
        try:
            return self._utf8.decode(data, final=final)
        except UnicodeDecodeError as exc:
            # exc.object: the bytes held back from the chunk before, then this chunk
            at = self.read_bytes - len(exc.object) + exc.start
            raise BadJson(f"the file is not UTF-8 (byte {at + 1:,}: {exc.reason})") from None

    def skip_space(self) -> str:
        """The next non-space character ('' at the end of the file), not consumed."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""


def iter_array(stream: BinaryIO, chunk: int = CHUNK) -> Iterator[Element]:
    """Yield each element of the JSON array in `stream` (binary, UTF-8)."""
    buf = _Buffer(stream, chunk)
    if buf.skip_space() != "[":
        raise BadJson("the file is not a JSON array (it should start with '[')")
    buf.pos += 1
    index = 0
    if buf.skip_space() == "]":
        return
    while True:
        value = _decode_one(buf, index)
        yield Element(index, value, buf.read_bytes)
        index += 1
        sep = buf.skip_space()
        if sep == ",":
            buf.pos += 1
            continue
        if sep == "]":
            return
        raise BadJson(f"element {index + 1}: expected ',' or ']' after it")


def _decode_one(buf: _Buffer, index: int) -> object:
    if buf.skip_space() == "":
        raise BadJson(f"element {index + 1}: the file ends inside the array")
    while True:
        try:
            value, end = _DECODER.raw_decode(buf.text, buf.pos)
        except json.JSONDecodeError as exc:
            if _cut(exc, buf.text) and buf.more(at_least=len(buf.text)):
                continue
            raise BadJson(f"element {index + 1}: {exc.msg}") from None
        except RecursionError:
            raise BadJson(f"element {index + 1}: nested too deeply") from None
        if end == len(buf.text) and not buf.eof and buf.more():  # a number may go on
            continue
        buf.pos = end
        return value


def _cut(exc: json.JSONDecodeError, text: str) -> bool:
    """True when the error is the buffer's end (read on), False for broken JSON (stop now)."""
    return exc.pos >= len(text) - 16 or exc.msg.startswith("Unterminated string")
