"""What a sense handler is given and what it returns.

A handler is `async def handle(att: Attachment, ctx: SenseContext) -> Prepared`
(`bridge.core.perceive.Prepared`): text to put before the person's message,
images for the model, notices for the person, or a refusal saying why the
file could not be used. It may raise: the pipeline turns any exception into
a short "could not be read" line (logged with the kind, never the content).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bridge.core.masks import SplitMask
from bridge.core.perceive import Prepared
from bridge.senses.decode_wire import Job, Op
from bridge.senses.decoders import Decoded
from bridge.types.messages import Attachment
from bridge.types.tools import TurnContext

_UNSHOWN = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True, slots=True)
class SenseLimits:
    """`[limits]` keys of the senses."""

    attachment_bytes: int = 20 * 1024 * 1024
    image_max_side: int = 1568
    document_chars: int = 20_000
    attachment_keep_hours: float = 72.0
    image_max_pixels: int = 40_000_000  # pixels decoded at most (a JPEG's after draft scaling)
    document_pages: int = 300  # a PDF's pages read at most
    decode_seconds: float = 20.0  # one file's reading, in its decoder process
    decode_memory_mb: int = 1024  # one decoder process's address space

    def job(self, op: Op, kind: str = "") -> Job:
        """The decoder job of one attachment under these limits."""
        return Job(
            op,
            max_bytes=self.attachment_bytes,
            seconds=self.decode_seconds,
            max_side=self.image_max_side,
            max_pixels=self.image_max_pixels,
            max_pages=self.document_pages,
            max_chars=self.document_chars,
            kind=kind,
        )


Decode = Callable[[Job, int], Awaitable[Decoded]]
"""(job, open file descriptor) -> what the tenant's decoder process made of it."""


@dataclass(frozen=True, slots=True)
class SenseContext:
    """One turn as a handler sees it: the turn, the limits, whether its model can see,
    and the decoder processes (bound to the turn's tenant)."""

    turn: TurnContext
    limits: SenseLimits
    vision: bool = False
    vision_models: tuple[str, ...] = ()  # configured model names that can see images
    decode: Decode | None = None
    platform_bytes: int = 0  # what the bot may fetch from the message's platform (0: no cap)
    # the tenant's masker: a text cut at a limit goes in masked, less a tail that may be the
    # start of a vault value (the turn masks the whole later: a cut value it never sees)
    mask: SplitMask | None = None

    def cut(self, text: str, limit: int) -> str:
        """`text`'s first `limit` characters where the text goes on past them (the decoder
        may have cut it already), masked and without the tail that may begin a secret's
        spelling."""
        if self.mask is None:
            return text[:limit]
        return self.mask.split(text[:limit])[0]


Handler = Callable[[Attachment, SenseContext], Awaitable[Prepared]]


def shown_name(att: Attachment, fallback: str = "the file") -> str:
    """The sender's file name, fit to show (no controls or bidi tricks, at most 80)."""
    name = _UNSHOWN.sub("", att.name).strip()
    if not name:
        return fallback
    return name if len(name) <= 80 else name[:79] + "…"


def in_workspace(att: Attachment, ctx: SenseContext) -> str:
    """The file's path as a tool sees it (relative to the workspace): inbox/NAME."""
    return f"inbox/{att.path.rsplit('/', 1)[-1]}"


def megabytes(n: int) -> str:
    return f"{n / 1_048_576:.1f} MB"
