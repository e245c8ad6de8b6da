"""Length-prefixed frames between the loop and the audit writer process.

A frame is a 4-byte little-endian length and a `marshal`-ed tuple of plain
values (str, int, None, dict, list): nothing in it is code, and both ends
are this project's own processes joined by a private socketpair.
"""

from __future__ import annotations

import marshal
import struct
from typing import Any

_LEN = struct.Struct("<I")


def frame(value: Any) -> bytes:
    body = marshal.dumps(value)
    return _LEN.pack(len(body)) + body


def split(buf: bytearray) -> list[Any]:
    """The complete frames at the start of `buf`, removed from it (a partial one stays)."""
    out: list[Any] = []
    pos, end = 0, len(buf)
    while end - pos >= 4:
        (size,) = _LEN.unpack_from(buf, pos)
        if end - pos - 4 < size:
            break
        out.append(marshal.loads(bytes(buf[pos + 4 : pos + 4 + size])))
        pos += 4 + size
    if pos:
        del buf[:pos]
    return out
