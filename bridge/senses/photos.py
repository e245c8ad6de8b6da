"""Photos in: to the model as an image part, downscaled, re-encoded, metadata gone.

With a model that can see (`vision = true` on its `[llm]` / `[models.X]`
table) a photo is decoded with Pillow (JPEG, PNG, WebP or GIF only, checked
from the bytes, never the name), its size checked before the pixels are
decoded (at most `MAX_PIXELS`), turned upright by its EXIF orientation,
shrunk so its longer side is at most `[limits] image_max_side`, and
re-encoded (JPEG, or PNG when it has transparency) without EXIF, GPS or
other metadata. The work runs in a thread. A model that cannot see gets no
turn: the person is told to switch with /model.
"""

from __future__ import annotations

import asyncio
import io
from typing import TYPE_CHECKING

from bridge.core.perceive import Prepared
from bridge.senses.files import Refused, read_bytes
from bridge.senses.handlers import SenseContext
from bridge.types.backend import ImagePart
from bridge.types.messages import Attachment

if TYPE_CHECKING:  # Pillow is imported when a photo arrives
    from PIL import Image

FORMATS = ("JPEG", "PNG", "WEBP", "GIF")
MAX_PIXELS = 40_000_000  # a 40 MP photo decodes to ~120 MB RGB; more is refused unread
JPEG_QUALITY = 85


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
    data = read_bytes(att, ctx)
    part = await asyncio.to_thread(downscale, data, ctx.limits.image_max_side)
    return Prepared(images=(part,))


def downscale(data: bytes, max_side: int) -> ImagePart:
    """The photo as a re-encoded image part no larger than `max_side`; `Refused` if unusable."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data), formats=FORMATS) as img:
            width, height = img.size
            if width * height > MAX_PIXELS:
                raise Refused(_too_many(width, height))
            scale = min(1.0, max_side / max(width, height))
            target = (max(1, int(width * scale)), max(1, int(height * scale)))
            img.draft("RGB", target)  # JPEG: decode at 1/2, 1/4 or 1/8 scale, still >= target
            upright = ImageOps.exif_transpose(img)
        return _encoded(upright, max_side)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise Refused("📷 The photo is too large to open (too many pixels).") from None
    except UnidentifiedImageError:
        raise Refused(
            "📷 I could not read the photo: I open JPEG, PNG, WebP and GIF images."
        ) from None
    except (OSError, SyntaxError, ValueError):  # truncated or damaged data
        raise Refused("📷 I could not read the photo: the file is damaged.") from None


def _too_many(width: int, height: int) -> str:
    return (
        f"📷 The photo is {width}×{height} pixels; I open photos up to "
        f"{MAX_PIXELS // 1_000_000} megapixels. Please send a smaller one."
    )


def _encoded(img: Image.Image, max_side: int) -> ImagePart:
    from PIL import Image

    alpha = img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)
    img = img.convert("RGBA" if alpha else "RGB")
    img.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    if alpha:  # no metadata is passed on: EXIF, GPS, comments and profiles stay behind
        img.save(out, "PNG")
        return ImagePart("image/png", out.getvalue())
    img.save(out, "JPEG", quality=JPEG_QUALITY)
    return ImagePart("image/jpeg", out.getvalue())
