"""Windows-1252 as roost reads it: the five bytes it leaves undefined as Latin-1.

Shared by the text rule (`bridge.senses.text_encoding`: a legacy file's bytes) and the
masker (`bridge.loadout.mask`: a secret's UTF-8 bytes read as Windows-1252, the spelling
a mixed-encoding file would have shown before). Pure.
"""

from __future__ import annotations

import codecs

UNDEFINED_1252 = frozenset({0x81, 0x8D, 0x8F, 0x90, 0x9D})
CP1252_TABLE = "".join(
    chr(b) if b in UNDEFINED_1252 else bytes([b]).decode("cp1252") for b in range(256)
)


def read_1252(data: bytes) -> str:
    """`data` read as Windows-1252 byte by byte (never fails)."""
    return codecs.charmap_decode(data, "strict", CP1252_TABLE)[0]
