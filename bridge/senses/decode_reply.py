"""A decoder's frames, read and validated on the daemon's side: nothing in them is trusted.

The process that wrote them has just parsed a hostile file, so a frame is
read with a hard size bound (`read_frame`) and parsed with a strict model:
unknown fields, a reason roost does not know, negative counts or text
longer than the job allowed are all a `ValueError`, and the daemon treats
the decoder as failed.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bridge.senses.decode_wire import BLOB_MAX, LENGTH

Why = Literal[
    "",
    "pixels",  # more pixels than image_max_pixels (width, height, limit)
    "scans",  # a progressive JPEG with more scans than allowed (scans, limit)
    "format",  # not JPEG, PNG, WebP or GIF
    "damaged",  # truncated or corrupt
    "size",  # larger than attachment_bytes (checked again in the decoder)
    "encrypted",  # a PDF that needs a password
    "invalid",  # not a PDF pypdf can parse
    "no_text",  # a PDF without a text layer
    "not_text",  # a "text" file whose bytes are not text (text_encoding's rule)
    "time",  # the decoder's own deadline passed before anything was read
    "memory",  # the decoder's memory limit was reached
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Ready(_Strict):
    ready: Literal[True]
    missing: list[Literal["landlock", "seccomp"]]
    blob: Literal[0]


class DecodeReply(_Strict):
    """One job's outcome as the decoder reports it."""

    ok: bool
    blob: int = Field(0, ge=0, le=BLOB_MAX)
    why: Why = ""
    mime: Literal["", "image/jpeg", "image/png"] = ""
    text: str = ""
    chars: int = Field(0, ge=0)
    about: str = Field("", max_length=200)
    pages: int = Field(0, ge=0)
    read: int = Field(0, ge=0)
    stopped: Literal["", "pages", "chars", "time"] = ""
    width: int = Field(0, ge=0)
    height: int = Field(0, ge=0)
    scans: int = Field(0, ge=0)
    limit: int = Field(0, ge=0)


async def read_frame(stream: asyncio.StreamReader, limit: int) -> bytes:
    """One frame's JSON header; `ValueError` past `limit` bytes (nothing more is read)."""
    size = LENGTH.unpack(await stream.readexactly(LENGTH.size))[0]
    if size > limit:
        raise ValueError(f"a decoder frame of {size} bytes (at most {limit})")
    return await stream.readexactly(size)


def parse_reply(raw: bytes, max_chars: int) -> DecodeReply:
    reply = DecodeReply.model_validate_json(raw)
    if len(reply.text) > max_chars:
        raise ValueError("a decoder sent more text than its job allowed")
    if reply.ok and reply.blob and not reply.mime:
        raise ValueError("a decoder sent an image without its type")
    return reply
