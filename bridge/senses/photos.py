"""Photos in: to the model as an image part, downscaled, re-encoded, metadata gone.

With a model that can see (`vision = true` on its `[llm]` / `[models.X]`
table) a photo is opened the checked way (`files.open_checked`) and handed
to a decoder process (`decoders`, `decode_image`): JPEG, PNG, WebP or GIF
only, checked from the bytes, never the name; its decoded size and a
progressive JPEG's scans judged from the header before any pixel is
decoded (`[limits] image_max_pixels`); turned upright by its EXIF
orientation, shrunk so its longer side is at most `[limits] image_max_side`
and re-encoded (JPEG, or PNG when it has transparency) without EXIF, GPS
or other metadata; all of it within `[limits] decode_seconds` and
`decode_memory_mb`. A model that cannot see gets no turn: the person is
told to switch with /model.
"""

from __future__ import annotations

import os

from bridge.core.perceive import Prepared
from bridge.senses.files import open_checked
from bridge.senses.handlers import SenseContext
from bridge.senses.reading import decoded
from bridge.types.backend import ImagePart
from bridge.types.messages import Attachment


def no_vision(ctx: SenseContext) -> str:
    """The reply when the chat's model cannot see images."""
    if ctx.vision_models:
        can = ", ".join(ctx.vision_models[:5])
        return (
            f"📷 This model cannot see images; switch with /model {ctx.vision_models[0]} "
            f"(models that can: {can}) and send the photo again."
        )
    return (
        "📷 This model cannot see images; switch with /model to one that can "
        "(the operator marks it with vision = true in its [llm] or [models.NAME] table)."
    )


async def photo(att: Attachment, ctx: SenseContext) -> Prepared:
    """The `photo` handler."""
    if not ctx.vision:
        return Prepared(refusal=no_vision(ctx))
    fd, _ = open_checked(att, ctx)
    try:
        result = await decoded(att, ctx, ctx.limits.job("image"), fd)
    finally:
        os.close(fd)
    return Prepared(images=(ImagePart(result.reply.mime, result.blob),))
