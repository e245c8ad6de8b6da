"""Hostile images: a header that claims a huge canvas (a decompression bomb) is
refused from its header alone, before any pixel is decoded; a truncated file and
bytes that are no image get clear refusals too. The PNG is built by hand (the
public "PNG bomb" shape: a tiny file whose IHDR claims tens of thousands of
pixels a side), so no large buffer is ever made by the test."""

from __future__ import annotations

import struct
import zlib

import pytest

from bridge.senses.files import Refused
from bridge.senses.photos import downscale


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def png_claiming(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    idat = zlib.compress(b"\x00" * 64)  # far less data than the header promises
    return (
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(("width", "height"), [(50_000, 50_000), (200_000, 300)])
def test_a_huge_canvas_is_refused_from_its_header(width: int, height: int) -> None:
    bomb = png_claiming(width, height)
    assert len(bomb) < 200
    with pytest.raises(Refused) as refused:
        downscale(bomb, 1568)
    assert "pixels" in str(refused.value)


def test_a_truncated_or_fake_image_is_refused_clearly() -> None:
    with pytest.raises(Refused, match=r"damaged|could not read"):
        downscale(png_claiming(64, 64)[:40], 1568)
    with pytest.raises(Refused, match="JPEG, PNG, WebP and GIF"):
        downscale(b"<html><script>alert(1)</script></html>", 1568)
