"""Length-prefixed frames: an 8-byte little-endian length, then that many bytes.

The frame layer of both sandbox wires, and the one error every decoder raises.
"""

from __future__ import annotations

import struct

HEADER = struct.Struct("<Q")


class ProtocolError(ValueError):
    """A frame or document that breaks the protocol."""


class FrameTooLarge(ProtocolError):
    """A frame announces more bytes than the reader accepts."""


def frame(data: bytes) -> bytes:
    return HEADER.pack(len(data)) + data


def unframe(buf: bytes | bytearray) -> bytes | None:
    """The document of a complete frame at the start of `buf`, else None."""
    if len(buf) < HEADER.size:
        return None
    (size,) = HEADER.unpack_from(buf)
    end = HEADER.size + size
    return bytes(buf[HEADER.size : end]) if len(buf) >= end else None


class FrameReader:
    """Incremental frame decoder: feed bytes as they arrive, get complete frames."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The frames completed by `data`; raises FrameTooLarge on an oversize header."""
        buf = self._buf
        buf += data
        out: list[bytes] = []
        start = 0
        while len(buf) - start >= HEADER.size:
            (size,) = HEADER.unpack_from(buf, start)
            if size > self.max_size:
                raise FrameTooLarge(f"a frame of {size} bytes; the limit is {self.max_size}")
            end = start + HEADER.size + size
            if len(buf) < end:
                break
            out.append(bytes(buf[start + HEADER.size : end]))
            start = end
        if start:
            del buf[:start]
        return out

    def buffered(self) -> int:
        """Bytes of an incomplete frame held back."""
        return len(self._buf)
