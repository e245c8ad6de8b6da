"""Log redaction knows the vault masker's spellings (bridge/app/logging_setup.py).

A library that logs a server's error body writes a configured secret the way
that server escaped it: PHP's JSON `\\/`, Go's `&#43;`, every character as
`\\uXXXX`, `%2f`/`%2F` mixed, upper case. The Redactor masks each like the
vault masker does (`bridge.loadout.mask`), and still the plain forms.
"""

from __future__ import annotations

import json

import pytest

from bridge.app.logging_setup import MASK, Redactor

KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY+EXAMPLEKEY"

LINES = [
    "error body: " + json.dumps({"key": KEY}).replace("/", "\\/"),
    "<p>bad key " + KEY.replace("+", "&#43;").replace("/", "&#x2F;") + "</p>",
    "k=" + "".join(f"\\u{ord(c):04x}" for c in KEY),
    "GET /?k=" + KEY.replace("/", "%2f", 1).replace("/", "%2F").replace("+", "%2B"),
    "KEY " + KEY.upper(),
    "plain " + KEY,
]


@pytest.mark.parametrize("line", LINES)
def test_an_escaped_secret_is_redacted_from_a_log_line(line: str) -> None:
    out = Redactor([KEY]).redact(line)
    assert MASK in out
    assert "wjalrxutnfemi" not in out.lower() and "examplekey" not in out.lower()


def test_a_line_without_the_secret_is_unchanged() -> None:
    line = 'GET /a%2Fb?x=1&amp;y=2 "C:\\new" \\u00e9'
    assert Redactor([KEY]).redact(line) == line
