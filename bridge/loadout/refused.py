"""The secrets in a text the screen refused: which spans to mask where the turn is stored.

The secret screen (`bridge.screening.screen.secret_kinds`) says *that* a text
holds a credential, never *where* (its rules read context: `password is X`,
`DB_PASSWORD=X`, a Luhn-valid card). `secret_spans(text)` asks it as an
oracle: the text is cut into tokens (runs without whitespace or `= : ; ,`
and quotes; digit groups split by single spaces or dashes stay one token, as
card numbers are written), every token is replaced by a placeholder, and
then tokens are given back, in halves as long as the text stays clean and
one by one where it does not. The tokens the screen needs to flag the text
are the spans; the words around them (`password is`, `DB_PASSWORD=`) stay.
This asks the screen O(k log n) times for k secret tokens among n, and each
ask is linear in the text. A PEM or PuTTY private key is a span as a whole
block (the screen sees its header; the key is the body).

Whatever rules the screen gains, this finds their spans without a change
here: it knows no rule of its own beyond the private-key blocks.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bridge.screening.screen import secret_kinds

PLACEHOLDER = "x"  # one letter: no rule reads it as a value, a key or a token
_TOKEN = re.compile(r"\d(?:[ -]?\d){7,}|[^\s=:;,\"'`<>()\[\]{}]+")
_KEY_BLOCK = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)"
    r"|PuTTY-User-Key-File-\d.*\Z",
    re.DOTALL,
)


def _flags(text: str) -> bool:
    return bool(secret_kinds(text))


def secret_spans(text: str, flags: Callable[[str], bool] = _flags) -> list[str]:
    """The spans of `text` that make `flags` (the secret screen) refuse it, in order."""
    if not flags(text):
        return []
    blocks = [m.group(0) for m in _KEY_BLOCK.finditer(text)]
    rest = _KEY_BLOCK.sub(PLACEHOLDER, text)
    if not flags(rest):
        return blocks
    tokens = list(_TOKEN.finditer(rest))
    hidden = [True] * len(tokens)

    def render() -> str:
        out, last = [], 0
        for m, hide in zip(tokens, hidden, strict=True):
            out.append(rest[last : m.start()])
            out.append(PLACEHOLDER if hide else m.group(0))
            last = m.end()
        out.append(rest[last:])
        return "".join(out)

    if flags(render()):  # a secret the tokens cannot separate: the whole text is the span
        return [*blocks, text]

    def give_back(lo: int, hi: int) -> None:
        hidden[lo:hi] = [False] * (hi - lo)
        if not flags(render()):
            return
        hidden[lo:hi] = [True] * (hi - lo)
        if hi - lo > 1:
            mid = (lo + hi) // 2
            give_back(lo, mid)
            give_back(mid, hi)

    give_back(0, len(tokens))
    return [*blocks, *(m.group(0) for m, hide in zip(tokens, hidden, strict=True) if hide)]
