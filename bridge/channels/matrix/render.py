"""Markdown -> Matrix message contents: a plain `body` and an HTML `formatted_body`.

An answer is rendered once to text + spans (`bridge.channels.common.text`,
markdown-it-py's CommonMark tokens; raw HTML in the answer stays text) and
split there (never inside a word when a space or line break is near, never
inside an emoji sequence). Each piece becomes `{"msgtype": "m.text", "body":
<plain text>, "format": "org.matrix.custom.html", "formatted_body": <HTML>}`.
The HTML is written from the spans, so it only ever holds the safe subset
the spec suggests clients allow: `strong`, `em`, `del`, `code`, `pre`
(`<code class="language-x">` inside), `blockquote`, `a href` (http, https
and mailto only; any other link is its text) and `br`; every text character
is escaped. A piece whose contents would make an edit event (which carries
the text twice) pass the 64 KiB event limit is split again, smaller.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from bridge.channels.common.text import Rendered, render, split, utf16_len

LIMIT = 8_000  # UTF-16 units of text in one message
EVENT_BUDGET = 28_000  # bytes of one content's JSON (an edit holds it twice; the cap is 65,536)
NO_SPAN_CAP = 1 << 30
FORMAT = "org.matrix.custom.html"
TAGS = {"bold": "strong", "italic": "em", "strikethrough": "del", "code": "code"}
_LANGUAGE = re.compile(r"^[A-Za-z0-9_+\-.#]{1,32}$")
_SCHEMES = ("http://", "https://", "mailto:")


def contents(markdown: str, limit: int = LIMIT) -> list[dict[str, Any]]:
    """The answer as message contents of at most `limit` units of text each."""
    out: list[dict[str, Any]] = []
    for piece in split(render(markdown), limit, NO_SPAN_CAP):
        out.extend(_fitted(piece))
    return [c for c in out if c["body"].strip()]


def content(rendered: Rendered) -> dict[str, Any]:
    body = rendered.text
    formatted = to_html(rendered)
    if formatted == html.escape(body, quote=False).replace("\n", "<br/>"):
        return {"msgtype": "m.text", "body": body}  # nothing formatted: plain is enough
    return {"msgtype": "m.text", "body": body, "format": FORMAT, "formatted_body": formatted}


def plain(text: str, msgtype: str = "m.notice") -> dict[str, Any]:
    """A message of plain text (a notice by default: bots' notices do not ping)."""
    return {"msgtype": msgtype, "body": text}


def edit(event_id: str, new: dict[str, Any]) -> dict[str, Any]:
    """An `m.replace` edit of `event_id` to `new` (with the fallback clients without
    edits show: the text again, marked with "* ")."""
    fallback = {**new, "body": "* " + new["body"]}
    if "formatted_body" in new:
        fallback["formatted_body"] = "* " + new["formatted_body"]
    return {
        **fallback,
        "m.new_content": new,
        "m.relates_to": {"rel_type": "m.replace", "event_id": event_id},
    }


def to_html(rendered: Rendered) -> str:
    """One piece's spans written as HTML tags around its escaped text."""
    text = rendered.text
    at = _code_points(text)
    opens: dict[int, list[tuple[int, str]]] = {}
    closes: dict[int, list[tuple[int, str]]] = {}
    pre: list[tuple[int, int]] = []
    for k, entity in enumerate(rendered.entities):
        start, end = at.get(entity.offset), at.get(entity.end)
        if start is None or end is None or start >= end:
            continue
        pair = _tags(entity.type, entity.url, entity.language)
        if pair is None:
            continue
        if entity.type == "pre":
            pre.append((start, end))
        opens.setdefault(start, []).append((end * 10_000 - k, pair[0]))
        closes.setdefault(end, []).append((start * 10_000 + k, pair[1]))
    out: list[str] = []
    for i in range(len(text) + 1):
        # inner spans close first (the one that opened last), outer ones open first
        out.extend(tag for _, tag in sorted(closes.get(i, ()), reverse=True))
        out.extend(tag for _, tag in sorted(opens.get(i, ()), reverse=True))
        if i < len(text):
            ch = text[i]
            inside_pre = any(s <= i < e for s, e in pre)
            out.append("<br/>" if ch == "\n" and not inside_pre else html.escape(ch, quote=False))
    return "".join(out)


def _tags(kind: str, url: str | None, language: str | None) -> tuple[str, str] | None:
    if kind in TAGS:
        return f"<{TAGS[kind]}>", f"</{TAGS[kind]}>"
    if kind == "pre":
        cls = f' class="language-{language}"' if language and _LANGUAGE.fullmatch(language) else ""
        return f"<pre><code{cls}>", "</code></pre>"
    if kind == "blockquote":
        return "<blockquote>", "</blockquote>"
    if kind == "text_link" and url and url.lower().startswith(_SCHEMES):
        return f'<a href="{html.escape(url, quote=True)}">', "</a>"
    return None


def _fitted(piece: Rendered) -> list[dict[str, Any]]:
    made = content(piece)
    size = len(json.dumps(made, ensure_ascii=False).encode())
    units = utf16_len(piece.text)
    if size <= EVENT_BUDGET or units <= 1:
        return [made]
    smaller = max(1, min(units - 1, units * EVENT_BUDGET // size - 8))
    return [c for sub in split(piece, smaller, NO_SPAN_CAP) for c in _fitted(sub)]


def _code_points(text: str) -> dict[int, int]:
    """UTF-16 offset -> code point index, for every boundary between characters."""
    at = {0: 0}
    units = 0
    for i, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        at[units] = i + 1
    return at
