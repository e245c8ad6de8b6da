"""Documents in: PDF, plain text, Markdown, CSV and JSON, read into the turn.

The type comes from the first 64 KB (`%PDF-`), then from the sender's file
name or MIME type, and a "text" file must look like text by the rule every
channel shares (`text_encoding`: UTF-8, UTF-16 with a BOM, or UTF-8 where valid
and Windows-1252 for the other bytes, mostly printable; no NUL bytes otherwise).
The file itself is read by a decoder process (`reading.decoded`): a PDF's text layer page by page
(`pdf.py`: pages, characters and seconds bounded), text decoded by that
rule (the encoding named when not UTF-8), JSON checked, a CSV's shape
counted (`decode_text.py`). The text goes before the person's message, framed by
the file's name and where a tool finds it (`inbox/NAME` in the workspace),
and cut visibly at `[limits] document_chars`; pages not read (page limit,
time limit, enough text) are named in the header, at the cut and in a
notice. Other types get a reply naming what is supported.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from bridge.core.perceive import Prepared
from bridge.senses.files import Refused, head, open_checked
from bridge.senses.handlers import SenseContext, in_workspace, shown_name
from bridge.senses.reading import decoded, not_text
from bridge.senses.text_encoding import TextSniff
from bridge.types.messages import Attachment

if TYPE_CHECKING:  # built when a decoder first starts (bridge.senses.decoders)
    from bridge.senses.decode_reply import DecodeReply

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
    if said is not None and not looks_like_text(data[:65536]):
        raise Refused(not_text(att))
    return said


def looks_like_text(start: bytes) -> bool:
    """Whether the first bytes of a file are text by the shared rule (the decoder
    process checks the whole file again)."""
    sniff = TextSniff()
    sniff.feed(start)
    return sniff.encoding(final=False) is not None


async def document(att: Attachment, ctx: SenseContext) -> Prepared:
    """The `document` handler."""
    fd, _ = open_checked(att, ctx)
    try:
        kind = kind_of(att, head(fd))
        if kind is None:
            return Prepared(refusal=f"📎 I cannot read {shown_name(att)}: I read {SUPPORTED}.")
        if kind == "PDF":
            result = await decoded(att, ctx, ctx.limits.job("pdf"), fd)
            return pdf_framed(att, ctx, result.reply)
        result = await decoded(att, ctx, ctx.limits.job("text", kind), fd)
    finally:
        os.close(fd)
    reply = result.reply
    return framed(att, ctx, reply.text, reply.chars, reply.about)


def pdf_framed(att: Attachment, ctx: SenseContext, reply: DecodeReply) -> Prepared:
    """A PDF's text; the pages not read (page limit, time limit, enough text) are said
    in the header, at the cut and, for time and text, in a notice. Text that stops before
    the PDF's end goes through `ctx.cut` (masked, less a tail that may begin a value)."""
    n, read, limit = reply.pages, reply.read, ctx.limits.document_chars
    about = f"PDF, {n} page{'s' if n != 1 else ''}"
    if reply.stopped == "pages":
        about += f", the text of the first {read} read"
    if reply.stopped not in ("time", "chars"):
        text = reply.text
        if reply.stopped == "pages" and reply.chars <= limit:
            # the last page read may end in the start of a value the next page goes on with
            text = ctx.cut(text, limit)
        return framed(att, ctx, text, reply.chars, about)
    about += f", the text of pages 1–{read} read"
    if reply.stopped == "time":
        why = (
            f"reading it took longer than {ctx.limits.decode_seconds:g} seconds "
            "([limits] decode_seconds)"
        )
    else:
        why = f"that is more than the {limit:,} characters I take in"
    where = in_workspace(att, ctx)
    cut = f"… [cut: pages {read + 1}–{n} not read; the whole file is in your workspace at {where}]"
    notice = f"📎 {shown_name(att)}: I read pages 1–{read} of {n}; {why}."
    return framed(att, ctx, ctx.cut(reply.text, limit) + "\n" + cut, 0, about, (notice,))


def framed(
    att: Attachment,
    ctx: SenseContext,
    text: str,
    total: int,
    about: str,
    notices: tuple[str, ...] = (),
) -> Prepared:
    """The text between a header and an end line, cut visibly at the limit (`total`: the
    length of the whole text, of which the decoder sent at most the limit)."""
    name, where, limit = shown_name(att), in_workspace(att, ctx), ctx.limits.document_chars
    top = f'[file "{name}" ({about}); the whole file is in your workspace at {where}]'
    body = text
    if total > limit:
        rest = total - limit
        body = ctx.cut(text, limit) + (
            f"\n… [cut: {rest:,} more characters; the whole file is in your workspace at {where}]"
        )
        notices += (f"📎 {name} is long: I read the first {limit:,} of {total:,} characters.",)
    return Prepared(text_prefix=f'{top}\n{body}\n[end of file "{name}"]', notices=notices)
