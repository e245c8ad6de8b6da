"""Hostile files, built on the spot in the shapes public write-ups describe.

- Decompression bombs whose header claims a huge canvas over a few bytes of
  data: a PNG (IHDR only; "PNG bombs"), a GIF (logical screen 65535²), a
  lossless WebP whose five prefix codes have one symbol each, so every pixel
  costs zero bits (RFC 9649 §3.7.2.1.1 "simple code length code"): 32 bytes
  decode to 6300² pixels, as in the report of issue 21.
- JPEGs: any JPEG with its frame header (SOF) patched to claim another size;
  a progressive JPEG whose AC scan is repeated thousands of times (each scan
  one more pass over every coefficient, a few bytes each thanks to EOB runs:
  libjpeg-turbo's "Two Issues with the JPEG Standard", LJT-01-003, and the
  oss-fuzz files of libjpeg-turbo issues #252 and #284).
- PDFs: one dense content stream (hundreds of thousands of operators, a few
  KB deflated) shared by every page, so each page costs seconds to parse; a
  stream that inflates to 100 MB (a zip-bomb inside a PDF).
- Truncated copies of each.
"""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image
from pypdf import PdfWriter
from pypdf.generic import DictionaryObject, NameObject, StreamObject

from bridge.senses.decode_image import _next_marker


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims `width`×`height` over 64 bytes of pixel data."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    idat = zlib.compress(b"\x00" * 64)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )


def gif_claiming(width: int, height: int) -> bytes:
    """A GIF89a whose logical screen is `width`×`height`, with one 1×1 frame."""
    palette = b"\x00" * 3 + b"\xff" * 3
    screen = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + palette
    frame = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    return screen + frame + b"\x3b"


class _Bits:
    def __init__(self) -> None:
        self.value = self.count = 0

    def put(self, value: int, width: int) -> None:
        self.value |= (value & ((1 << width) - 1)) << self.count
        self.count += width

    def data(self) -> bytes:
        return self.value.to_bytes((self.count + 7) // 8, "little")


def webp_lossless(
    width: int, height: int, rgba: tuple[int, int, int, int] = (10, 200, 30, 255)
) -> bytes:
    """A lossless WebP of one colour: no transform, no colour cache, one prefix code group
    of five one-symbol codes, so the pixel data is zero bits long whatever the size."""
    bits = _Bits()
    bits.put(0x2F, 8)
    bits.put(width - 1, 14)
    bits.put(height - 1, 14)
    bits.put(0, 1)  # alpha hint
    bits.put(0, 3)  # version
    bits.put(0, 1)  # no transform
    bits.put(0, 1)  # no colour cache
    bits.put(0, 1)  # no meta prefix codes
    red, green, blue, alpha = rgba
    for symbol in (green, red, blue, alpha):
        bits.put(1, 1)  # simple code length code
        bits.put(0, 1)  # one symbol
        bits.put(1, 1)  # of 8 bits
        bits.put(symbol, 8)
    for value in (1, 0, 0, 0):  # distance code: simple, one symbol, 1 bit, symbol 0
        bits.put(value, 1)
    payload = bits.data()
    chunk = b"VP8L" + struct.pack("<I", len(payload)) + payload + b"\x00" * (len(payload) % 2)
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def _jpeg_segments(data: bytes) -> list[tuple[int, int, int]]:
    """(start, end, marker) of each segment; a scan's segment includes its entropy data."""
    found, pos = [], 2
    while pos < len(data):
        code = data[pos + 1]
        if code == 0xD9:
            found.append((pos, pos + 2, code))
            break
        end = pos + 2 + int.from_bytes(data[pos + 2 : pos + 4], "big")
        if code == 0xDA:
            end = _next_marker(data, end)
        found.append((pos, end, code))
        pos = end
    return found


def flat_jpeg(width: int, height: int, *, progressive: bool = False) -> bytes:
    out = io.BytesIO()
    Image.new("L", (width, height), 128).save(out, "JPEG", quality=90, progressive=progressive)
    return out.getvalue()


def jpeg_claiming(data: bytes, width: int, height: int) -> bytes:
    """`data` (a JPEG) with its frame header claiming `width`×`height`."""
    start = next(s for s, _, code in _jpeg_segments(data) if code in (0xC0, 0xC1, 0xC2))
    return data[: start + 5] + struct.pack(">HH", height, width) + data[start + 9 :]


def many_scans_jpeg(width: int, height: int, scans: int) -> bytes:
    """A valid progressive JPEG whose first AC scan is repeated `scans` times more."""
    data = flat_jpeg(width, height, progressive=True)

    def first_ac(start: int) -> bool:
        at = start + 5 + 2 * data[start + 4]  # after the component selectors: Ss, Se, Ah|Al
        return data[at] > 0 and data[at + 2] >> 4 == 0

    start, end = next((s, e) for s, e, code in _jpeg_segments(data) if code == 0xDA and first_ac(s))
    eoi = data.rindex(b"\xff\xd9")
    return data[:eoi] + data[start:end] * scans + data[eoi:]


def _helvetica(writer: PdfWriter) -> DictionaryObject:
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})
    return DictionaryObject({NameObject("/Font"): fonts})


def _pdf_with(content: bytes, pages: int) -> bytes:
    """A PDF of `pages` pages that all share one deflated content stream."""
    writer = PdfWriter()
    stream = StreamObject()
    stream._data = zlib.compress(content, 9)
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    shared = writer._add_object(stream)
    resources = writer._add_object(_helvetica(writer))
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = resources
        page[NameObject("/Contents")] = shared
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def dense_pdf(pages: int = 300, operators: int = 200_000) -> bytes:
    """Every page: one character of text and `operators` text-position operators
    (seconds of parsing a page for about 45 KB in all)."""
    return _pdf_with(b"BT /F1 1 Tf (x) Tj " + b"0 0 Td " * operators + b"ET", pages)


def inflate_bomb_pdf(megabytes: int = 100) -> bytes:
    """One page whose content stream inflates to `megabytes` MB of spaces."""
    return _pdf_with(b"BT /F1 9 Tf (hi) Tj ET" + b" " * (megabytes * 1_000_000), 1)
