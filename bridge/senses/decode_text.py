"""Text documents (plain, Markdown, CSV, JSON), read inside a decoder process.

`read_text(data, job)` decodes the file by the one rule every channel
uses (`text_encoding`: UTF-8, UTF-16 with a BOM, else Windows-1252 when
it looks like text; anything else is refused as "not_text"), names the
encoding in its description when it was not UTF-8, says whether JSON is
valid (and where it is not), sniffs a CSV's dialect and counts its rows
and columns, and returns at most `job.max_chars` of the stripped text with
its full length, so the daemon never holds more text than the model is
shown. Parsing a 20 MB JSON or CSV costs memory and CPU:
it is done here, under the decoder's limits, never in the daemon.
"""

from __future__ import annotations

import csv
import io
import json

from bridge.senses.decode_image import Unreadable
from bridge.senses.decode_wire import Job
from bridge.senses.text_encoding import decode

SNIFF_CHARS = 65_536


def read_text(data: bytes, job: Job) -> dict[str, object]:
    """{"text", "chars", "about"}: the text (cut), its length, and a short description
    (ending in ", read as Windows-1252", ", read as UTF-16" or ", read as UTF-8 (2 bytes not
    UTF-8, read as Windows-1252)" when it was not all UTF-8, so
    a tool that opens the file knows how); `Unreadable("not_text")` for a binary file."""
    found = decode(data)
    if found is None:
        raise Unreadable("not_text")
    text = found.text
    about = job.kind
    if job.kind == "JSON":
        about = json_validity(text)
    elif job.kind == "CSV":
        about = csv_shape(text)
    if found.encoding != "utf-8" or found.legacy:
        about += f", read as {found.shown}"
    body = text.strip()
    return {"text": body[: job.max_chars], "chars": len(body), "about": about}


def json_validity(text: str) -> str:
    try:
        json.loads(text)
    except RecursionError:
        return "JSON, nested too deeply to check"
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            return f"JSON, not valid: {exc.msg} at line {exc.lineno}"
        return "JSON, not valid"
    return "JSON"


def csv_shape(text: str) -> str:
    """'CSV, 120 rows, 5 columns, separated by ";"' (or what could be told)."""
    try:
        dialect = csv.Sniffer().sniff(text[:SNIFF_CHARS], delimiters=",;\t|")
        delimiter = dialect.delimiter
    except csv.Error:
        delimiter = ","
    rows = cols = 0
    try:
        for row in csv.reader(io.StringIO(text), delimiter=delimiter):
            rows += 1
            cols = max(cols, len(row))
    except csv.Error:
        return "CSV, not readable as a table"
    shown = "tab" if delimiter == "\t" else f'"{delimiter}"'
    return f"CSV, {rows} rows, {cols} columns, separated by {shown}"
