"""A photo, decoded inside a decoder process: its header judged first, then bounded pixels.

`downscale(data, job)` opens JPEG, PNG, WebP or GIF only (from the bytes),
and before any pixel is decoded it judges what decoding would cost:

- the pixels decoded: a baseline JPEG is decoded at 1/2, 1/4 or 1/8 scale
  (`Image.draft`, still at least `max_side`), so it is its drafted size that
  counts; a progressive JPEG keeps every coefficient of the full image in
  memory whatever the scale, so its full size counts, as a PNG's, WebP's or
  GIF's canvas does; more than `max_pixels` is refused with the size;
- the scans of a progressive JPEG, counted from its markers
  (`jpeg_layout`): each scan is one more pass over every coefficient, and a
  file of tiny "EOB run" scans makes that pass cost seconds for a few bytes
  (libjpeg-turbo's report "Two Issues with the JPEG Standard", LJT-01-003;
  oss-fuzz cases of over 1,000 scans); encoders write about 10, so more
  than `max_scans` is refused.

Then it decodes, shrinks the longer side to `max_side` (Pillow's `reduce`
first, then Lanczos), turns the result upright by its EXIF orientation and
re-encodes it (JPEG, or PNG with transparency) without any metadata. A file
Pillow cannot identify or finish is `Unreadable`; the daemon words the reply.
"""

from __future__ import annotations

import io
import struct
import warnings

from PIL import (
    GifImagePlugin,  # noqa: F401  (the four formats are imported before confinement)
    Image,
    ImageOps,
    JpegImagePlugin,  # noqa: F401
    PngImagePlugin,  # noqa: F401
    UnidentifiedImageError,
    WebPImagePlugin,  # noqa: F401
)

from bridge.senses.decode_wire import Job

FORMATS = ("JPEG", "PNG", "WEBP", "GIF")
MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"RIFF")  # one of ours, cut
JPEG_QUALITY = 85
PROGRESSIVE_SOF = frozenset({0xC2, 0xC6, 0xCA, 0xCE})
STANDALONE = frozenset({0x01, *range(0xD0, 0xD9)})  # TEM, RSTn, SOI: no length field


class Unreadable(Exception):
    """The file cannot be used; `why` names the reason, `details` the figures."""

    def __init__(self, why: str, **details: int) -> None:
        super().__init__(why)
        self.why = why
        self.details = details


def _next_marker(data: bytes, pos: int) -> int:
    """The offset of the next marker after entropy-coded data (`FF 00` is a stuffed
    byte and `FF D0`..`FF D7` a restart marker: both belong to the data)."""
    while True:
        pos = data.find(b"\xff", pos)
        if pos < 0 or pos + 1 >= len(data):
            return -1
        code = data[pos + 1]
        if code == 0x00 or 0xD0 <= code <= 0xD7 or code == 0xFF:
            pos += 1 if code == 0xFF else 2
            continue
        return pos


def jpeg_layout(data: bytes, max_scans: int) -> tuple[bool, int]:
    """(progressive, scans) of a JPEG from its markers; counting stops past `max_scans`."""
    progressive, scans, pos = False, 0, 2
    while pos >= 0 and pos + 4 <= len(data) and scans <= max_scans:
        if data[pos] != 0xFF:
            break  # not a marker where one must be: the decoder will say it is damaged
        code = data[pos + 1]
        if code == 0xFF:
            pos += 1
            continue
        if code == 0xD9:
            break
        if code in STANDALONE:
            pos += 2
            continue
        end = pos + 2 + int.from_bytes(data[pos + 2 : pos + 4], "big")
        if code in PROGRESSIVE_SOF:
            progressive = True
        if code == 0xDA:
            scans += 1
            pos = _next_marker(data, end)
        else:
            pos = end
    return progressive, scans


def webp_canvas(data: bytes) -> tuple[int, int] | None:
    """A WebP's canvas from its first chunk (VP8X, VP8L or VP8), or None when not WebP.
    Pillow's WebP reader allocates the canvas (twice) as it opens the file, so the
    size is judged from these bytes before Pillow sees them."""
    if len(data) < 30 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    kind, body = data[12:16], data[20:30]
    if kind == b"VP8X":
        return int.from_bytes(body[4:7], "little") + 1, int.from_bytes(body[7:10], "little") + 1
    if kind == b"VP8L" and body[0] == 0x2F:
        bits = int.from_bytes(body[1:5], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8 " and body[3:6] == b"\x9d\x01\x2a":
        return (
            int.from_bytes(body[6:8], "little") & 0x3FFF,
            int.from_bytes(body[8:10], "little") & 0x3FFF,
        )
    return None


def _decoded_pixels(img: Image.Image, data: bytes, job: Job, target: tuple[int, int]) -> int:
    """How many pixels decoding `img` will make (after `draft` for a baseline JPEG)."""
    width, height = img.size
    if img.format != "JPEG":
        return width * height
    progressive, scans = jpeg_layout(data, job.max_scans)
    if scans > job.max_scans:
        raise Unreadable("scans", scans=scans, limit=job.max_scans)
    if progressive:
        return width * height
    img.draft("RGB", target)  # decode at 1/2, 1/4 or 1/8 scale, still >= target
    return img.size[0] * img.size[1]


def downscale(data: bytes, job: Job) -> tuple[str, bytes]:
    """(MIME type, bytes) of the photo re-encoded, at most `job.max_side` a side."""
    Image.MAX_IMAGE_PIXELS = None  # judged here, before decoding, with the drafted size
    canvas = webp_canvas(data)
    if canvas is not None and canvas[0] * canvas[1] > job.max_pixels:
        raise Unreadable("pixels", width=canvas[0], height=canvas[1], limit=job.max_pixels)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data), formats=FORMATS) as img:
                width, height = img.size
                scale = min(1.0, job.max_side / max(width, height, 1))
                target = (max(1, int(width * scale)), max(1, int(height * scale)))
                if _decoded_pixels(img, data, job, target) > job.max_pixels:
                    raise Unreadable("pixels", width=width, height=height, limit=job.max_pixels)
                img.load()
                return _encoded(img, job.max_side)
    except UnidentifiedImageError:
        raise Unreadable("damaged" if data.startswith(MAGIC) else "format") from None
    except (OSError, SyntaxError, ValueError, EOFError, struct.error):  # truncated, damaged
        raise Unreadable("damaged") from None


def _encoded(img: Image.Image, max_side: int) -> tuple[str, bytes]:
    alpha = img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)
    if img.mode not in ("RGB", "RGBA", "L", "LA"):
        img = img.convert("RGBA" if alpha else "RGB")
    img.thumbnail((max_side, max_side), Image.Resampling.LANCZOS, reducing_gap=2.0)
    upright = ImageOps.exif_transpose(img) or img
    out = io.BytesIO()
    if alpha:  # no metadata is passed on: EXIF, GPS, comments and profiles stay behind
        upright.convert("RGBA").save(out, "PNG")
        return "image/png", out.getvalue()
    upright.convert("RGB").save(out, "JPEG", quality=JPEG_QUALITY)
    return "image/jpeg", out.getvalue()
