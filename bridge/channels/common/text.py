"""Markdown as text + spans, and splitting it by a limit: shared by every platform.

`render(markdown)` parses with markdown-it-py (CommonMark, tables,
strikethrough; raw HTML stays text) into plain text plus `Entity` spans
(bold, italic, strikethrough, code, pre, text_link, blockquote; offsets in
UTF-16 code units, nested legally). `split(rendered, limit)` cuts it into
pieces of at most `limit` UTF-16 units, at a paragraph, line or space
outside every span first, never inside a surrogate pair or an emoji
sequence; a span that crosses a cut is cut too. Both are pure; a platform
writes the spans out in its own way (`bridge.channels.whatsapp.render`).
The implementation is Telegram's renderer and splitter, re-exported here.
"""

from __future__ import annotations

from bridge.channels.telegram_entities import Entity, Rendered, utf16_len
from bridge.channels.telegram_render import render
from bridge.channels.telegram_split import split, visible

__all__ = ["Entity", "Rendered", "render", "split", "utf16_len", "visible"]
