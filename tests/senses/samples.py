"""Real files made on the spot: JPEG photos with EXIF, PNGs, PDFs with a text layer.

`make_pdf(pages)` writes a PDF with pypdf's own writer: one page per text,
Helvetica (a standard font every reader knows, so nothing is embedded),
each line drawn with `Tj` in a content stream; `encrypt` sets a user
password (RC4-128, which pypdf reads without extra libraries).
"""

from __future__ import annotations

import io

from PIL import Image
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

GPS_IFD = 0x8825
ORIENTATION = 0x0112


def make_jpeg(width: int, height: int, *, exif: bool = True, noise: bool = False) -> bytes:
    """A JPEG photo; with EXIF (camera, GPS position, orientation 1) unless told not."""
    if noise:  # photo-like entropy: compresses about as badly as a real photo
        import random

        rng = random.Random(width * 7919 + height)
        img = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
        img = img.resize((width, height))
    else:
        img = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    out = io.BytesIO()
    if exif:
        data = Image.Exif()
        data[0x010F] = "RoostCam"  # Make
        data[ORIENTATION] = 1
        data[GPS_IFD] = {1: "N", 2: (52.0, 31.0, 12.0), 3: "E", 4: (13.0, 24.0, 36.0)}
        img.save(out, "JPEG", quality=90, exif=data)
    else:
        img.save(out, "JPEG", quality=90)
    return out.getvalue()


def make_png(width: int, height: int, *, alpha: bool = False) -> bytes:
    img = Image.new("RGBA" if alpha else "RGB", (width, height), (200, 30, 30, 128))
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


def _escaped(line: str) -> bytes:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")


def make_pdf(pages: list[str], *, password: str = "") -> bytes:
    """A PDF whose pages carry these texts (lines split on newlines)."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(612, 792)
        fonts = DictionaryObject({NameObject("/F1"): font_ref})
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
        ops = [b"BT /F1 11 Tf 14 TL 72 740 Td"]
        ops += [b"(" + _escaped(line) + b") Tj T*" for line in text.split("\n")]
        ops.append(b"ET")
        stream = DecodedStreamObject()
        stream.set_data(b"\n".join(ops))
        page[NameObject("/Contents")] = writer._add_object(stream)
    if password:
        writer.encrypt(user_password=password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
