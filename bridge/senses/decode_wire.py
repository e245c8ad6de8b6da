"""What the daemon and a decoder process say to each other: one job in, one reply out.

Shared by both sides, so it imports nothing but the standard library (the
decoder process imports it before it is confined). The daemon sends one
`Job` (JSON) with the attachment's open file descriptor attached
(SCM_RIGHTS) on the decoder's stdin, a `SOCK_SEQPACKET` socket; the
decoder answers on stdout with one frame: a 4-byte big-endian length, a
JSON header, then `blob` raw bytes (a re-encoded image). Before it takes
the job the decoder writes one frame of its own: `{"ready": true,
"missing": [...]}` (confinement layers this machine lacks).

The header is untrusted on the daemon's side (`decode_reply` validates it):
the process that wrote it has parsed a hostile file.
"""

from __future__ import annotations

import json
import struct
from dataclasses import asdict, dataclass
from typing import Literal

Op = Literal["image", "pdf", "text"]
LENGTH = struct.Struct(">I")
JOB_MAX = 16 * 1024  # a job is a few numbers and a word
BLOB_MAX = 32 * 1024 * 1024  # a re-encoded image at most image_max_side a side


@dataclass(frozen=True, slots=True)
class Job:
    """One file to read and the limits to read it under (from `[limits]`)."""

    op: Op
    max_bytes: int  # the file's size was checked by the daemon; the decoder checks again
    seconds: float  # the decoder's own soft deadline; the daemon kills a little after it
    max_side: int = 1568  # image: longer side of what the model gets
    max_pixels: int = 40_000_000  # image: pixels decoded at most
    max_scans: int = 100  # image: scans of a progressive JPEG at most
    max_pages: int = 300  # pdf: pages read at most
    max_chars: int = 20_000  # pdf, text: characters returned at most
    kind: str = ""  # text: "text", "Markdown", "CSV" or "JSON"

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Job:
        return cls(**json.loads(raw))


def frame(header: dict[str, object], blob: bytes = b"") -> bytes:
    """One reply frame: length, JSON header (with the blob's length), the blob."""
    body = json.dumps({**header, "blob": len(blob)}, separators=(",", ":")).encode()
    return LENGTH.pack(len(body)) + body + blob


def header_limit(max_chars: int) -> int:
    """The largest header a decoder may send for a job (text is UTF-8, JSON-escaped)."""
    return 12 * max_chars + 64 * 1024
