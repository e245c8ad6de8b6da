"""One attachment through a decoder process, and what the person is told when it fails.

`decoded(att, ctx, job, fd)` hands the open file to the tenant's decoder
(`SenseContext.decode`) and returns its reply; every way it can fail
becomes a `Refused` whose text names the limit that was reached and the
`[limits]` key that sets it, so a bomb gets a clear reply, never silence.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bridge.senses.decode_wire import Job
from bridge.senses.decoders import Decoded, DecodeFailed
from bridge.senses.files import Refused
from bridge.senses.handlers import SenseContext, shown_name
from bridge.types.messages import Attachment

if TYPE_CHECKING:  # built when a decoder first starts (bridge.senses.decoders)
    from bridge.senses.decode_reply import DecodeReply

log = logging.getLogger(__name__)
PHOTO_FORMATS = "JPEG, PNG, WebP and GIF"


def _seconds(value: float) -> str:
    return f"{value:g} second{'s' if value != 1 else ''}"


def failure_text(name: str, why: str, ctx: SenseContext) -> str:
    """The reply for a decoder that gave no result (out of time, crashed, busy...)."""
    limits = ctx.limits
    if why == "time":
        return (
            f"📎 {name} took longer than {_seconds(limits.decode_seconds)} to read "
            "([limits] decode_seconds), so I stopped. It may be built to slow readers "
            "down; please send a simpler file."
        )
    if why == "memory":
        return (
            f"📎 {name} needs more than {limits.decode_memory_mb} MB of memory to read "
            "([limits] decode_memory_mb), so I stopped. Please send a smaller file."
        )
    if why == "busy":
        return f"📎 I am still reading your other files; please send {name} again in a moment."
    if why == "closed":
        return f"📎 roost is shutting down; please send {name} again in a moment."
    if why == "start":
        return f"📎 I could not start a reader for {name}; the operator's log says why."
    return f"📎 I could not read {name}: the reader stopped on it (the file may be damaged)."


def not_text(att: Attachment) -> str:
    """The reply for a file sent as text whose bytes are not text."""
    return f"📎 {shown_name(att)} is not a text file, whatever its name says."


def refusal_text(att: Attachment, reply: DecodeReply, ctx: SenseContext) -> str:
    """The reply for a file the decoder read and refused."""
    name = shown_name(att)
    if reply.why == "pixels":
        return (
            f"📷 The photo is {reply.width}×{reply.height} pixels; I open photos of up to "
            f"{reply.limit / 1_000_000:g} megapixels ([limits] image_max_pixels). "
            "Please send a smaller one."
        )
    if reply.why == "scans":
        return (
            f"📷 The photo is a progressive JPEG of more than {reply.limit} scans; I open up "
            f"to {reply.limit} (cameras write about 10; many more make a small file take "
            "minutes to open). Please save it again or send a screenshot."
        )
    if reply.why == "format":
        return f"📷 I could not read the photo: I open {PHOTO_FORMATS} images."
    if reply.why == "damaged":
        return f"📎 I could not read {name}: the file is damaged."
    if reply.why == "encrypted":
        return (
            f"📎 {name} is protected with a password; I cannot read it. "
            "Please send a copy without the password."
        )
    if reply.why == "invalid":
        return f"📎 I could not read {name}: it is not a valid PDF."
    if reply.why == "not_text":
        return not_text(att)
    if reply.why == "no_text":
        return (
            f"📎 {name} has no text I can read (a scanned document?). "
            "Send the pages as photos instead."
        )
    return failure_text(name, reply.why or "crashed", ctx)


async def decoded(att: Attachment, ctx: SenseContext, job: Job, fd: int) -> Decoded:
    """The decoder's result for the open file `fd`; `Refused` with the reason otherwise."""
    if ctx.decode is None:
        raise Refused(failure_text(shown_name(att), "start", ctx))
    try:
        result = await ctx.decode(job, fd)
    except DecodeFailed as exc:
        if exc.why == "start":
            log.error("senses: a decoder process could not be started")
        raise Refused(failure_text(shown_name(att), exc.why, ctx)) from None
    if not result.reply.ok:
        raise Refused(refusal_text(att, result.reply, ctx))
    return result
