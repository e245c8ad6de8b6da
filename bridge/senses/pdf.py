"""A PDF's text layer, read with pypdf.

`pdf_text(data, max_pages)` returns the text of the first `max_pages`
pages and how many pages the file has. An encrypted PDF is tried with the
empty password (many "protected" PDFs only restrict printing); one that
needs a real password, a file pypdf cannot parse, and a PDF without any
text (a scan) are `Refused` with a reason. pypdf bounds what a stream may
inflate to (75 MB by default: decompression bombs stop there). Runs in a
thread (the caller's).
"""

from __future__ import annotations

import io
import logging

from bridge.senses.files import Refused

MAX_PAGES = 300  # pages read at most; the rest is named in the cut


def pdf_text(data: bytes, name: str, max_pages: int = MAX_PAGES) -> tuple[str, int]:
    """(text of the first `max_pages` pages, page count); `Refused` if unreadable."""
    from pypdf.errors import PdfReadError, PyPdfError  # imported when a PDF arrives

    quiet = logging.getLogger("pypdf")
    level, quiet.level = quiet.level, logging.ERROR  # its warnings name byte offsets, no more
    try:
        return _read(data, name, max_pages)
    except Refused:
        raise
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, RecursionError, OSError):
        raise Refused(f"📎 I could not read {name}: it is not a valid PDF.") from None
    finally:
        quiet.level = level


def _read(data: bytes, name: str, max_pages: int) -> tuple[str, int]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted and not reader.decrypt(""):
        raise Refused(
            f"📎 {name} is protected with a password; I cannot read it. "
            "Please send a copy without the password."
        )
    count = len(reader.pages)
    pages = []
    for index in range(min(count, max_pages)):
        pages.append((reader.pages[index].extract_text() or "").strip())
    text = "\n\n".join(f"[page {i + 1}]\n{t}" for i, t in enumerate(pages) if t)
    if not any(pages):
        raise Refused(
            f"📎 {name} has no text I can read (a scanned document?). "
            "Send the pages as photos instead."
        )
    return text, count
