"""Markdown as text + spans, and splitting it by a limit: shared by every platform.

`render(markdown)` parses with markdown-it-py (CommonMark, tables,
strikethrough; raw HTML stays text) into plain text plus `Entity` spans
(bold, italic, strikethrough, code, pre, text_link, blockquote; offsets in
UTF-16 code units, nested legally). `split(rendered, limit)` cuts it into
pieces of at most `limit` UTF-16 units, at a paragraph, line or space
outside every span first, never inside a surrogate pair or an emoji
sequence; a span that crosses a cut is cut too. Both are pure; a platform
writes the spans out in its own way (`bridge.channels.whatsapp.render`).
The implementation lives beside this module (`entities`, `render`, `inline`, `table`,
`split`); Telegram sends the spans as its message entities.
"""

from __future__ import annotations

from bridge.channels.common.entities import Entity, Rendered, utf16_len
from bridge.channels.common.render import render
from bridge.channels.common.split import split, visible

__all__ = ["Entity", "Rendered", "render", "split", "utf16_len", "visible"]
