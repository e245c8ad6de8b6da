"""A PDF's text layer, read with pypdf inside a decoder process, bounded three ways.

`pdf_text(data, job)` reads page after page until one of the bounds is
reached: `job.max_pages` pages (`[limits] document_pages`), `job.max_chars`
characters of text (`[limits] document_chars`: the model is shown no more,
so no more is extracted), or `job.seconds` (`[limits] decode_seconds`: the
decoder's alarm raises `OutOfTime` between two Python steps of pypdf, and
what was read so far is kept). One dense content stream shared by hundreds
of pages costs pypdf tens of seconds a page: the time bound is what ends it,
whatever the shape of the file. An encrypted PDF is tried with the empty
password (many "protected" PDFs only restrict printing); one that needs a
real password, a file pypdf cannot parse, a PDF without any text (a scan)
and one whose first page did not finish in time are `Unreadable`. pypdf
bounds what one stream may inflate to (75 MB): decompression bombs stop
there, and the process's memory limit stops the rest.
"""

from __future__ import annotations

import io
import logging

from pypdf import PdfReader
from pypdf.errors import PdfReadError, PyPdfError

from bridge.senses.decode_image import Unreadable
from bridge.senses.decode_wire import Job

PARSE_ERRORS = (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, RecursionError, OSError)


class OutOfTime(BaseException):
    """Raised by the decoder's alarm when `job.seconds` have passed (a BaseException:
    pypdf's own `except Exception` lets it through)."""


def pdf_text(data: bytes, job: Job) -> dict[str, object]:
    """{"text", "chars", "pages", "read", "stopped"}: the text of the pages read (at
    most `max_chars` of its `chars`), the page count, how many pages were read and why
    reading stopped ("" at the end, "pages", "chars" or "time")."""
    logging.getLogger("pypdf").setLevel(logging.CRITICAL)  # its warnings name byte offsets
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("encrypted")
        count = len(reader.pages)
    except OutOfTime:
        raise Unreadable("time") from None
    except PARSE_ERRORS:
        raise Unreadable("invalid") from None
    return _pages(reader, count, job)


def _pages(reader: PdfReader, count: int, job: Job) -> dict[str, object]:
    texts: list[str] = []
    chars, read, stopped = 0, 0, ""
    for index in range(count):
        if index >= job.max_pages:
            stopped = "pages"
            break
        if chars >= job.max_chars:
            stopped = "chars"
            break
        try:
            page = (reader.pages[index].extract_text() or "").strip()
        except OutOfTime:
            stopped = "time"
            break
        except PARSE_ERRORS:
            page = ""  # one damaged page: the others are still read
        read += 1
        if page:
            texts.append(f"[page {index + 1}]\n{page}")
            chars += len(texts[-1]) + 2
    if not texts:
        raise Unreadable("time" if stopped == "time" else "no_text")
    text = "\n\n".join(texts)
    return {
        "text": text[: job.max_chars],
        "chars": len(text),
        "pages": count,
        "read": read,
        "stopped": stopped,
    }
