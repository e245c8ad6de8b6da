"""The broker's rules, pure: which hosts a tool may reach, which addresses are
refused, how a secret reference is filled into its slot.

- A tool declares `NETWORK = ["api.example.com", "api.example.com:8443"]`; a
  bare host allows the scheme's default port (443; 80 for plain http), a
  `host:port` that port only. The operator's `[forge] private_hosts` uses the
  same spelling.
- https only, unless the URL's host (and port) is in `private_hosts`.
- After resolution every address must be global unicast (forge.net_addresses:
  the IANA special-purpose registries; every IPv6 form that carries an IPv4
  address is judged by that address, the deprecated forms are refused) unless
  the host is in `private_hosts`.
"""

from __future__ import annotations

import base64
import contextlib
import html
import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, AnyStr
from urllib.parse import quote, quote_plus

from forge.net_addresses import refusal
from forge.protocol.net import Parts

MIN_SECRET_CHARS = 4  # a shorter value is not masked (it would mask ordinary text)
HOST_RE = re.compile(
    r"(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*"
)


class Refused(Exception):
    """A request the rules refuse; the text is safe to show to the tool."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class HostRule:
    host: str
    port: int | None  # None: the scheme's default port

    def matches(self, host: str, port: int, default_port: int) -> bool:
        return self.host == host and (self.port or default_port) == port


def parse_host(entry: str) -> HostRule | None:
    """`host` or `host:port` (lower-case name or IPv4; `[v6]:port`), else None."""
    text = entry.strip().lower()
    port: int | None = None
    if text.startswith("["):
        end = text.find("]")
        host, rest = text[1:end], text[end + 1 :]
        if end < 0 or (rest and not rest.startswith(":")):
            return None
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
        text = host + rest
        host_part, _, port_text = host, "", rest[1:]
    else:
        host_part, _, port_text = text.partition(":")
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return None
        port = int(port_text)
    if ":" not in host_part and not HOST_RE.fullmatch(host_part):
        return None
    return HostRule(host_part, port)


def parse_hosts(entries: Iterable[str]) -> tuple[HostRule, ...]:
    rules = []
    for entry in entries:
        rule = parse_host(entry)
        if rule is None:
            raise ValueError(f"not a host or host:port: {entry!r}")
        rules.append(rule)
    return tuple(rules)


def listed(rules: Iterable[HostRule], host: str, port: int, default_port: int) -> bool:
    return any(r.matches(host, port, default_port) for r in rules)


def address_refusal(address: str) -> str | None:
    """Why `address` may not be reached (None: a global unicast address); the
    table and the IPv4-embedding forms are forge.net_addresses'."""
    return refusal(address)


# RFC 9110 5.1/5.6.2: a field name is a token. A tab or space before the colon
# ("Host\t") passed a plain `in FORBIDDEN_HEADERS` test and reached the wire,
# where a lenient front end reads it as a second Host or Transfer-Encoding (atk3 F2)
HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
# set by the broker's HTTP client, or hop-by-hop (RFC 9110 7.6.1): a tool may not
FORBIDDEN_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "te", "upgrade", "keep-alive",
     "trailer", "proxy-connection"}
)  # fmt: skip
_VALUE_BREAK = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # CTLs but HTAB (RFC 9110 5.5)


def header_name_refusal(name: object) -> str | None:
    """Why a tool may not send a header called `name` (None: it may)."""
    if not isinstance(name, str) or not HEADER_NAME_RE.fullmatch(name):
        return (
            f"header name {str(name)[:40]!r} is not a valid HTTP field name (1-128 letters, "
            "digits and !#$%&'*+.^_`|~- only: no space, tab, colon or line break)"
        )
    if name.lower() in FORBIDDEN_HEADERS:
        return f"header {name!r} may not be set (the broker sets it)"
    return None


def header_value_refusal(name: str, value: str) -> str | None:
    """Why a filled-in header value may not be sent (None: it may); never quotes
    the value (it may hold a secret)."""
    if _VALUE_BREAK.search(value):
        return f"header {name!r} holds a line break or another control character"
    return None


def render(parts: Parts, secrets: Mapping[str, str], escape: str = "") -> str:
    """The text of a slot with each vault reference replaced by its value, escaped
    for the slot: "" (header, query, form: encoded later), "json" (inside a JSON
    string)."""
    out = []
    for kind, text in parts:
        if kind == "t":
            out.append(text)
            continue
        value = secrets.get(text)
        if value is None:
            raise Refused("secret", f"secret {text!r} is not available to this tool")
        out.append(json.dumps(value, ensure_ascii=False)[1:-1] if escape == "json" else value)
    return "".join(out)


def has_secret(parts: Parts) -> bool:
    return any(kind == "v" for kind, _ in parts)


def spellings(value: str) -> tuple[str, ...]:
    """The text spellings of a vault value a server may echo without being asked to
    transform it: as is, URL-encoded (`quote` with and without `/` kept,
    `quote_plus`), JSON-escaped (with and without `ensure_ascii`, `/` also as `\\/`
    as PHP writes it), Python-escaped, HTML-escaped, hex and base64 of its UTF-8
    bytes. Longest first."""
    data = value.encode("utf-8")
    forms = [value, quote(value, safe=""), quote(value), quote_plus(value, safe="")]
    for escaped in (json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
        forms += [escaped, escaped.replace("/", "\\/")]
    forms += [value.encode("unicode_escape").decode("ascii"), html.escape(value)]
    forms += [html.escape(value, quote=False), data.hex()]
    for b64 in (base64.b64encode(data), base64.urlsafe_b64encode(data)):
        forms += [b64.decode("ascii"), b64.decode("ascii").rstrip("=")]
    return tuple(sorted(dict.fromkeys(forms), key=len, reverse=True))


def byte_spellings(value: str) -> tuple[bytes, ...]:
    """The bytes a server may send for a vault value: each of `spellings` in UTF-8,
    and the value itself in UTF-16, UTF-32 and Latin-1 (a body's bytes are masked
    before they are decoded with the charset its label names, which the server or,
    through a reflecting endpoint, the tool chooses). Longest first."""
    forms = [s.encode("utf-8") for s in spellings(value)]
    for codec in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "latin-1"):
        with contextlib.suppress(UnicodeEncodeError):
            forms.append(value.encode(codec))
    return tuple(sorted(dict.fromkeys(forms), key=len, reverse=True))


def mask(text: str, secrets: Mapping[str, str], *, fold_case: bool = False) -> str:
    """`text` with every vault value the call holds, in each of its `spellings`,
    replaced by `[vault:name]` (the agent loop masks again, in every spelling it
    knows). Overlapping finds are masked as one stretch: a value that holds another
    is masked whole. With `fold_case`, regardless of case (header and host names
    are case-blind; a server may re-case what it echoes)."""
    fold = _fold_text(text) if fold_case else _same
    pairs = [(fold(f), m) for f, m in _forms(secrets, spellings, str)]
    return _replace(text, fold(text), pairs)


def mask_bytes(data: bytes, secrets: Mapping[str, str]) -> bytes:
    """`data` with every `byte_spellings` of each vault value replaced by
    `[vault:name]`, regardless of ASCII case: a response body before it is decoded."""
    pairs = [(f.lower(), m) for f, m in _forms(secrets, byte_spellings, str.encode)]
    return _replace(data, data.lower(), pairs)


def _same(text: str) -> str:
    return text


def _fold_text(text: str) -> Callable[[str], str]:
    """A case fold that keeps every character's place: `str.lower`, or only ASCII
    letters when lower-casing `text` changes its length (as for U+0130)."""
    if len(text.lower()) == len(text):
        return str.lower
    return lambda t: t.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _forms(
    secrets: Mapping[str, str],
    forms: Callable[[str], tuple[AnyStr, ...]],
    marker: Callable[[str], AnyStr],
) -> list[tuple[AnyStr, AnyStr]]:
    """(spelling, marker) of every value long enough to mask."""
    return [
        (form, marker(f"[vault:{name}]"))
        for name, value in secrets.items()
        if len(value) >= MIN_SECRET_CHARS
        for form in forms(value)
        if len(form) >= MIN_SECRET_CHARS
    ]


def _replace(data: AnyStr, folded: AnyStr, pairs: list[tuple[AnyStr, AnyStr]]) -> AnyStr:
    """`data` with each find of a (folded) spelling in `folded` (the same places)
    replaced by its marker; overlapping finds become one stretch with their markers
    (one found inside another adds none). `find` in C: a regular expression of every
    spelling took seconds on a 1 MiB body."""
    spans: list[tuple[int, int, Any]] = []
    for form, marker in pairs:
        at = folded.find(form)
        while at >= 0:
            spans.append((at, at + len(form), marker))
            at = folded.find(form, at + len(form))
    if not spans:
        return data
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[tuple[int, int, list[Any]]] = []
    for start, end, mark in spans:
        if merged and start < merged[-1][1]:
            top: tuple[int, int, list[Any]] = merged[-1]
            if end > top[1]:
                held = top[2] if mark in top[2] else [*top[2], mark]
                merged[-1] = (top[0], end, held)
        else:
            merged.append((start, end, [mark]))
    pieces: list[Any] = []
    pos = 0
    for first, last, found in merged:
        pieces.append(data[pos:first])
        pieces.extend(found)
        pos = last
    pieces.append(data[pos:])
    return data[:0].join(pieces)
