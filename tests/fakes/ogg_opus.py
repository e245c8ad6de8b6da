"""OGG/Opus streams made and read offline, for the fakes and the voice tests.

`ogg_opus()` writes a structurally valid Ogg (RFC 3533) stream carrying Opus
(RFC 7845): an `OpusHead` page, an `OpusTags` page whose comments the caller
chooses, then 20 ms audio packets (TOC byte 0xF8: CELT, full band, 20 ms,
mono, one frame) with `packet_bytes` of seeded random frame data each - about
what a 32 kbit/s Telegram voice note carries; pages hold 50 packets (one
second) and end with the EOS flag, each with its CRC-32 (polynomial
0x04C11DB7, as Ogg defines it). Nothing here is copied from a recording: the
bytes are generated in the test, so no fixture file needs an origin. Checked
with opus-tools 0.2: `opusinfo` accepts the stream and `opusdec` decodes it;
`read_ogg_opus` reads what `opusenc` writes.

`read_ogg_opus()` parses and checks such a stream (capture pattern, CRC of
every page, the two header packets) and returns its comments and duration.
The fakes use the comments as the "content" of the audio: the fake
transcription server hears the `TRANSCRIPT` comment, and the fake speech
server writes what it was asked to say into `SPOKEN`, so a test can check
what reached the person's ears without decoding audio.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

PRE_SKIP = 312
RATE = 48_000
SAMPLES_PER_PACKET = 960  # 20 ms at 48 kHz
PACKETS_PER_PAGE = 50


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
        table.append(r & 0xFFFFFFFF)
    return table


_TABLE = _crc_table()


def ogg_crc(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _TABLE[((crc >> 24) & 0xFF) ^ byte]
    return crc


def _lacing(packet: bytes) -> bytes:
    n = len(packet)
    return bytes([255] * (n // 255) + [n % 255])


def _page(packets: list[bytes], granule: int, serial: int, seq: int, flags: int) -> bytes:
    segments = b"".join(_lacing(p) for p in packets)
    assert len(segments) <= 255
    header = struct.pack("<4sBBqIIIB", b"OggS", 0, flags, granule, serial, seq, 0, len(segments))
    page = bytearray(header + segments + b"".join(packets))
    struct.pack_into("<I", page, 22, ogg_crc(bytes(page)))
    return bytes(page)


def _tags(comments: dict[str, str]) -> bytes:
    vendor = b"roost-tests"
    out = b"OpusTags" + struct.pack("<I", len(vendor)) + vendor
    out += struct.pack("<I", len(comments))
    for key, value in comments.items():
        entry = f"{key}={value}".encode()
        out += struct.pack("<I", len(entry)) + entry
    return out


def ogg_opus(
    comments: dict[str, str] | None = None,
    seconds: float = 1.0,
    packet_bytes: int = 80,
    seed: int = 0,
) -> bytes:
    """An OGG/Opus stream of about `seconds` (whole 20 ms packets, at least one)."""
    rng = random.Random(seed)
    serial = rng.getrandbits(32)
    head = b"OpusHead" + struct.pack("<BBHIhB", 1, 1, PRE_SKIP, RATE, 0, 0)
    pages = [
        _page([head], 0, serial, 0, 0x02),
        _page([_tags(comments or {})], 0, serial, 1, 0),
    ]
    count = max(1, round(seconds * 1000 / 20))
    packets = [b"\xf8" + rng.randbytes(max(0, packet_bytes - 1)) for _ in range(count)]
    seq, done = 2, 0
    for start in range(0, count, PACKETS_PER_PAGE):
        chunk = packets[start : start + PACKETS_PER_PAGE]
        done += len(chunk)
        last = done == count
        granule = PRE_SKIP + done * SAMPLES_PER_PACKET
        pages.append(_page(chunk, granule, serial, seq, 0x04 if last else 0))
        seq += 1
    return b"".join(pages)


class NotOggOpus(ValueError):
    """The bytes are not a well-formed OGG/Opus stream."""


@dataclass(frozen=True)
class OggOpusInfo:
    comments: dict[str, str]
    duration_s: float
    pages: int


def _pages(data: bytes) -> list[tuple[int, int, list[bytes]]]:
    """(flags, granule, packets-or-fragments) of each page; CRCs checked."""
    out, pos = [], 0
    while pos < len(data):
        if data[pos : pos + 4] != b"OggS" or len(data) < pos + 27:
            raise NotOggOpus(f"no Ogg page at byte {pos}")
        _, _, flags, granule, _, _, crc, nseg = struct.unpack_from("<4sBBqIIIB", data, pos)
        table = data[pos + 27 : pos + 27 + nseg]
        size = sum(table)
        end = pos + 27 + nseg + size
        if len(table) < nseg or end > len(data):
            raise NotOggOpus("a page is cut off")
        page = bytearray(data[pos:end])
        struct.pack_into("<I", page, 22, 0)
        if ogg_crc(bytes(page)) != crc:
            raise NotOggOpus(f"bad CRC in the page at byte {pos}")
        body, packets, cur, at = data[pos + 27 + nseg : end], [], b"", 0
        for lace in table:
            cur += body[at : at + lace]
            at += lace
            if lace < 255:
                packets.append(cur)
                cur = b""
        out.append((flags, granule, packets))
        pos = end
    return out


def _comments(tags: bytes) -> dict[str, str]:
    if not tags.startswith(b"OpusTags"):
        raise NotOggOpus("the second packet is not OpusTags")
    (vlen,) = struct.unpack_from("<I", tags, 8)
    pos = 12 + vlen
    (count,) = struct.unpack_from("<I", tags, pos)
    pos += 4
    out = {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", tags, pos)
        key, _, value = tags[pos + 4 : pos + 4 + n].decode("utf-8").partition("=")
        out[key] = value
        pos += 4 + n
    return out


def read_ogg_opus(data: bytes) -> OggOpusInfo:
    pages = _pages(data)
    if len(pages) < 2 or not pages[0][2] or not pages[0][2][0].startswith(b"OpusHead"):
        raise NotOggOpus("the first packet is not OpusHead")
    if not pages[0][0] & 0x02:
        raise NotOggOpus("the first page is not marked beginning-of-stream")
    head = pages[0][2][0]
    (pre_skip,) = struct.unpack_from("<H", head, 10)
    comments = _comments(pages[1][2][0] if pages[1][2] else b"")
    last = max(0, pages[-1][1] - pre_skip)
    return OggOpusInfo(comments, last / RATE, len(pages))
