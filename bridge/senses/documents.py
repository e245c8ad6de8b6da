"""Documents in: PDF, plain text, Markdown, CSV and JSON, read into the turn.

The type comes from the bytes first (`%PDF-`), then from the sender's file
name or MIME type, and a "text" file must look like text (no NUL bytes).
Text is decoded as UTF-8 (a BOM dropped, bad bytes replaced); JSON is
parsed to say whether it is valid; a CSV's dialect is sniffed and its rows
and columns counted. The text goes before the person's message, framed by
the file's name and where a tool finds it (`inbox/NAME` in the workspace),
and cut visibly at `[limits] document_chars`. Other types get a reply
naming what is supported.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import PurePosixPath

from bridge.core.perceive import Prepared
from bridge.senses.files import Refused, read_bytes
from bridge.senses.handlers import SenseContext, in_workspace, shown_name
from bridge.senses.pdf import MAX_PAGES, pdf_text
from bridge.types.messages import Attachment

SUPPORTED = "PDF, plain text (.txt), Markdown (.md), CSV and JSON files, and photos"
BY_SUFFIX = {
    ".txt": "text",
    ".text": "text",
    ".log": "text",
    ".md": "Markdown",
    ".markdown": "Markdown",
    ".csv": "CSV",
    ".json": "JSON",
    ".pdf": "PDF",
}
BY_MIME = {
    "text/plain": "text",
    "text/markdown": "Markdown",
    "text/x-markdown": "Markdown",
    "text/csv": "CSV",
    "application/json": "JSON",
    "application/pdf": "PDF",
}


def kind_of(att: Attachment, data: bytes) -> str | None:
    """PDF, text, Markdown, CSV or JSON, from the bytes and then the name; None: not ours."""
    if b"%PDF-" in data[:1024]:
        return "PDF"
    said = BY_SUFFIX.get(PurePosixPath(att.name.lower()).suffix) or BY_MIME.get(att.mime.lower())
    if said == "PDF":
        raise Refused(f"📎 I could not read {shown_name(att)}: it is not a valid PDF.")
    if said is not None and b"\x00" in data[:65536]:
        raise Refused(f"📎 {shown_name(att)} is not a text file, whatever its name says.")
    return said


async def document(att: Attachment, ctx: SenseContext) -> Prepared:
    """The `document` handler."""
    data = read_bytes(att, ctx)
    kind = kind_of(att, data)
    name = shown_name(att)
    if kind is None:
        return Prepared(refusal=f"📎 I cannot read {name}: I read {SUPPORTED}.")
    if kind == "PDF":
        text, pages = await asyncio.to_thread(pdf_text, data, name)
        about = f"PDF, {pages} page{'s' if pages != 1 else ''}"
        if pages > MAX_PAGES:
            about += f", the text of the first {MAX_PAGES} read"
    else:
        text, about = await asyncio.to_thread(read_text, data, kind)
    return framed(att, ctx, text, about)


def read_text(data: bytes, kind: str) -> tuple[str, str]:
    """The decoded text and a short description (validity, CSV shape)."""
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if kind == "JSON":
        try:
            json.loads(text)
        except ValueError as exc:
            if isinstance(exc, json.JSONDecodeError):
                return text, f"JSON, not valid: {exc.msg} at line {exc.lineno}"
            return text, "JSON, not valid"
        return text, "JSON"
    if kind == "CSV":
        return text, csv_shape(text)
    return text, kind


def csv_shape(text: str) -> str:
    """'CSV, 120 rows, 5 columns, separated by ";"' (or what could be told)."""
    try:
        dialect = csv.Sniffer().sniff(text[:65536], delimiters=",;\t|")
        delimiter = dialect.delimiter
    except csv.Error:
        delimiter = ","
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error:
        return "CSV, not readable as a table"
    widths = {len(r) for r in rows if r}
    cols = max(widths, default=0)
    shown = "tab" if delimiter == "\t" else f'"{delimiter}"'
    return f"CSV, {len(rows)} rows, {cols} columns, separated by {shown}"


def framed(att: Attachment, ctx: SenseContext, text: str, about: str) -> Prepared:
    """The text between a header and an end line, cut visibly at the limit."""
    name, where, limit = shown_name(att), in_workspace(att, ctx), ctx.limits.document_chars
    head = f'[file "{name}" ({about}); the whole file is in your workspace at {where}]'
    notices: tuple[str, ...] = ()
    body = text.strip()
    if len(body) > limit:
        rest = len(body) - limit
        body = (
            body[:limit] + f"\n… [cut: {rest:,} more characters; the whole file is in your "
            f"workspace at {where}]"
        )
        total = limit + rest
        notices = (f"📎 {name} is long: I read the first {limit:,} of {total:,} characters.",)
    return Prepared(text_prefix=f'{head}\n{body}\n[end of file "{name}"]', notices=notices)
