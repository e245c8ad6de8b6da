"""Every common spelling of a secret value, and a search for any of them in a text.

Written from the encodings people and tools actually use on a credential:
the raw value, JSON / Python string escapes, URL-encoding (`quote`,
`quote_plus`, lower-case hex), hex (both cases), base64 std and urlsafe with
and without padding, and base64 of the value inside a longer blob (HTTP Basic
auth `user:value`, a `Bearer` line): for that, the characters fully decided
by the value's own bytes at each of the three byte alignments.
"""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote, quote_plus


def _cores(data: bytes) -> list[str]:
    out = []
    for prefix in (b"", b"u", b"us", b"user:"):
        blob = prefix + data + b"!tail"
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            text = enc(blob).decode()
            first = -(-len(prefix) * 8 // 6)  # first char decided by the value only
            last = (len(prefix) + len(data)) * 8 // 6  # chars fully inside the value
            out.append(text[first:last])
    return out


def spellings(value: str) -> dict[str, str]:
    data = value.encode()
    forms = {
        "raw": value,
        "json": json.dumps(value)[1:-1],
        "json_ascii": json.dumps(value, ensure_ascii=True)[1:-1],
        "repr": repr(value)[1:-1],
        "url": quote(value, safe=""),
        "url_plus": quote_plus(value),
        "url_lower": re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(value, safe="")),
        "hex": data.hex(),
        "HEX": data.hex().upper(),
        "b64": base64.b64encode(data).decode(),
        "b64_nopad": base64.b64encode(data).decode().rstrip("="),
        "b64url": base64.urlsafe_b64encode(data).decode(),
        "b64url_nopad": base64.urlsafe_b64encode(data).decode().rstrip("="),
    }
    for i, core in enumerate(_cores(data)):
        forms[f"b64_embedded_{i}"] = core
    return forms


def leaks(haystack: str, values: dict[str, str]) -> list[str]:
    """Names of every (secret, spelling) pair found in `haystack`."""
    found = []
    lower = haystack.lower()
    for name, value in values.items():
        for kind, form in spellings(value).items():
            hit = form.lower() in lower if kind in ("hex", "HEX") else form in haystack
            if hit:
                found.append(f"{name}:{kind}")
    return found
