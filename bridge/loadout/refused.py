"""The secrets in a text the screen refused: which spans to mask where the turn is stored.

The secret screen (`bridge.screening.screen.secret_kinds`) says *that* a text
holds a credential, never *where* (its rules read context: `password is X`,
`DB_PASSWORD=X`, a Luhn-valid card). `secret_spans(text)` asks it as an
oracle. The text is cut into candidate values: runs without whitespace
(`Sommer,2024;Regen!` is one, sentence punctuation at its ends aside), a
quoted string whole, spaces and all (`"Blau Haus 77 Tor"`), the value of a
`KEY=value` or `key: value` (never the key: `DB_PASSWORD=abc=def` offers
`abc=def`), the password of a URL's `user:password@`, digit groups split by
single spaces or dashes (card numbers). Every candidate is replaced by a
placeholder, then candidates are given back — in halves as long as the text
stays clean, one by one where it does not — trigger words first (`password`,
`is`, `Passwort`, `lautet`, `PIN`...), then other plain words, then the
value-like rest: the screen must be silenced by hiding values, never by
hiding the words that make a sentence about one. The candidates the screen
needs hidden are the spans. This asks the screen O(k log n) times for k
secret candidates among n, and each ask is linear in the text. A PEM or
PuTTY private key is a span as a whole block (the screen sees its header; the
key is the body).

Whatever rules the screen gains, this finds their spans without a change
here: it knows no rule of its own beyond the private-key blocks and which
words to give back first.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bridge.screening.screen import secret_kinds

SHORTEST = 4  # mask.MIN_SECRET_CHARS: a shorter span is never masked
PLACEHOLDER = "x"  # one letter: no rule reads it as a value, a key or a token
_RUN = r"(?:[^\s\"'`]|(?<=\w)[\"'`](?=\w))+"  # no whitespace; quotes only inside a word
_TOKEN = re.compile(
    r"(?P<card>\d(?:[ -]?\d){7,})"
    r"|[A-Za-z][\w+.-]*://(?P<user>[^\s:@/]*):(?P<url>[^\s@/]+)@"
    r"|(?<![\w\\])(?P<q>[\"'`])(?P<quoted>[^\n]*?)(?P=q)(?!\w)"
    r"|(?P<key>(?:--?|\$)?[A-Za-z_][\w.-]*)(?::(?!:)|=(?=[^\s=]))(?P<value>" + _RUN + ")?"
    r"|(?P<run>" + _RUN + ")"
)
_PAIR = re.compile(r"\s*[A-Za-z_][\w .-]*=(?P<value>[^;]*)")  # one of `Server=x;Password=y;`
_KEY_AFTER = re.compile(r"\s*[=:]")  # a quoted string before this is a key ("user": ...)
_LEADING = "([{<"
_TRAILING = ".,;:)]}>"
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")  # letters only: a word of the sentence
# Words that make a sentence about a secret: given back first, so never the span
# when hiding a value silences the screen.
_CONTEXT = re.compile(
    r"(?i)(?:.*(?:password|passwort|kennwort|passcode|passphrase|passwd|schlüssel|"
    r"pin|code|token|key|secret|credentials|zugangsdaten|login)|pass|pw|pwd|is|ist|was|war|"
    r"lautet|lautete|heißt|heisst|are|sind|my|mein|meine|meines|the|der|die|das|our|unser|"
    r"unsere|your|dein|deine|ihr|es|est|le|la|mot|de|passe)"
)
_KEY_BLOCK = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)"
    r"|PuTTY-User-Key-File-\d.*\Z",
    re.DOTALL,
)


def _flags(text: str) -> bool:
    return bool(secret_kinds(text))


def _key(name: str) -> bool:
    """Whether `name` before `=` or `:` names a setting (`DB_PASSWORD`, `pw`, `--password`)."""
    return bool(
        _CONTEXT.fullmatch(name)
        or name[0] in "-$"
        or "_" in name
        or "." in name
        or (name.isupper() and len(name) > 1)
    )


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """(start, end) without sentence punctuation at its ends; None if nothing is left."""
    while start < end and text[start] in _LEADING:
        start += 1
    while end > start and text[end - 1] in _TRAILING:
        end -= 1
    return (start, end) if any(c.isalnum() for c in text[start:end]) else None


def candidates(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each value in `text` that may be a secret, in order."""
    found: list[tuple[int, int] | None] = []
    for m in _TOKEN.finditer(text):
        for kind in ("card", "url"):
            if m.group(kind):
                found.append(m.span(kind))
                break
        else:
            if m.group("q"):
                if not _KEY_AFTER.match(text, m.end()):  # not a key of JSON or YAML
                    found.append(_trimmed(text, *m.span("quoted")))
            elif m.group("key") and _key(m.group("key")):
                if m.group("value"):  # else its value is the next token
                    found.append(_trimmed(text, *m.span("value")))
            else:  # a run (`Kx9:mP2,qL` is no setting named Kx9)
                start, end = m.span()
                run = text[start:end]
                if ";" in run and all("=" in part for part in run.split(";") if part):
                    found += [  # a connection string: each setting's value
                        _trimmed(text, start + p.start("value"), start + p.end("value"))
                        for p in _PAIR.finditer(run)
                    ]
                else:
                    found.append(_trimmed(text, start, end))
    return [span for span in found if span is not None]


def _tier(token: str) -> int:
    """0 for a word that makes a sentence about a secret, 1 another word, 2 a value."""
    if _CONTEXT.fullmatch(token):
        return 0
    return 1 if _WORD.fullmatch(token) else 2


def secret_spans(text: str, flags: Callable[[str], bool] = _flags) -> list[str]:
    """The spans of `text` that make `flags` (the secret screen) refuse it, in order."""
    if not flags(text):
        return []
    blocks = [m.group(0) for m in _KEY_BLOCK.finditer(text)]
    rest = _KEY_BLOCK.sub(PLACEHOLDER, text)
    if not flags(rest):
        return blocks
    tokens = candidates(rest)
    hidden = [True] * len(tokens)

    def render() -> str:
        out, last = [], 0
        for (start, end), hide in zip(tokens, hidden, strict=True):
            out.append(rest[last:start])
            out.append(PLACEHOLDER if hide else rest[start:end])
            last = end
        out.append(rest[last:])
        return "".join(out)

    if flags(render()):  # a secret the tokens cannot separate: the whole text is the span
        return [*blocks, text]

    def give_back(group: list[int]) -> None:
        for i in group:
            hidden[i] = False
        if not flags(render()):
            return
        for i in group:
            hidden[i] = True
        if len(group) > 1:
            mid = len(group) // 2
            give_back(group[:mid])
            give_back(group[mid:])

    tiers = [_tier(rest[start:end]) for start, end in tokens]
    for tier in (0, 1, 2):
        group = [i for i, t in enumerate(tiers) if t == tier]
        if group:
            give_back(group)
    # A screen that still reads the placeholder as a value (`-u developer:x`) leaves
    # only a trigger word or a mark too short to mask: then every value after it on
    # its line is hidden too, so the secret is never the part left in the clear.
    for i, (start, end) in enumerate(tokens):
        if hidden[i] and (tiers[i] == 0 or end - start < SHORTEST):
            line_end = rest.find("\n", end) % (len(rest) + 1)
            for j in range(i + 1, len(tokens)):
                if tokens[j][0] < line_end and tiers[j] > 0:
                    hidden[j] = True
    spans = [rest[start:end] for (start, end), hide in zip(tokens, hidden, strict=True) if hide]
    return [*blocks, *spans]
