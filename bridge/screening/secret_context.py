"""Secrets without a shape of their own, read from the key they are assigned to (pure).

- `assigned(text)`: a value after a secret-naming key in .env, shell, Makefile,
  YAML, INI, JSON (also escaped), XML, properties or code (`DB_PASSWORD=`,
  `aws_secret_access_key = `, `AccountKey=`, `"client_secret": `,
  `<apiToken>...</apiToken>`, `TOKEN ::= "..."`), in any case and after `_`,
  `.`, `-`; the key kinds follow gitleaks' generic-api-key rule and its
  allowlist (identifiers such as `key_id`, `primary_key`, `public_key` are not
  secrets; nor are references such as `${DB_PASSWORD}` or public keys).
- `named(text)`: gitleaks' semi-generic rules: a token-like value assigned to
  a key that names a service (`TWITTER_CONSUMER=...`), from `secret_rules.toml`,
  when that service's name occurs in the text (looked for only once a key and
  its value fit: a clean text pays no search per name).
- `assigned_in` and `named_in` take the text's `Assignments`, read once for both.
- `card_number(text)`: 13-19 digits with a card network's prefix that pass Luhn.

Each scan is one pass of a pattern that cannot start inside its own run of
characters (run only near the characters every match holds: `=`, `:`, `>`,
digits; `windowed.Scanner`), plus a bounded look at each hit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import cache

from bridge.screening.literal_trie import alternation
from bridge.screening.public_shapes import entropy, identifier_key, public_value, reference
from bridge.screening.rule_data import NamedRule, rule_set
from bridge.screening.windowed import Scanner

Assignment = tuple[list[str], str]  # the key's parts (lower-case), the value

# up to the value: a match of `_ASSIGN` at a position is a match of this there first
_HEAD = (
    r"(?<![A-Za-z0-9_.\-])(?:(?P<pre>[A-Za-z]{2,20})[ \t])?(?P<key>[A-Za-z][A-Za-z0-9_.\-]{0,63}+)"
    r"\\?[\"'\]]?[ \t]{0,8}(?:(?:=>|:{1,3}=|[?+.]=|=|:)[ \t]{0,8}|>)"
)
_ASSIGN = re.compile(_HEAD + r"(?:\\?[\"'`])?(?P<val>[^\s\"'`,;<>\\]{1,512}+)")
# the head is at most ~110 characters wide (the value up to 512 more): windowed, it runs
# only near `=`, `:` and `>` (`windowed.Scanner`), and `_ASSIGN` only where it matched
_HEAD_SCAN = Scanner(re.compile(_HEAD), shipped=True)
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# A key whose last part is one of these holds a password: any real value counts.
_PASSWORD_LAST = frozenset(
    "password passwd pwd pass passphrase passwort kennwort secret pw credentials".split()  # noqa: SIM905
)
_PASSWORD_SUFFIX = ("password", "passwd", "passphrase", "passwort", "kennwort", "secret")
# A key whose last part is one of these holds a token: the value must look like one.
_TOKEN_LAST = frozenset(
    "key token sig signature auth authorization credential apikey sas cookie".split()  # noqa: SIM905
)
_TOKEN_SUFFIX = ("apikey", "accesskey", "accountkey", "secretkey", "authtoken", "accesstoken",
                 "apitoken", "privatekey", "authkey", "clientsecret", "refreshtoken")  # fmt: skip
_PLACEHOLDER = frozenset(
    """true false null none nil yes no required optional empty blank string str text hidden
    redacted placeholder example changeme changeit changeme_later your_password xxx undefined
    env secret password token key value test dummy sample foo bar baz""".split()  # noqa: SIM905
)
_QUALIFIERS = frozenset("public pub publishable site".split())  # noqa: SIM905
_EXAMPLE = re.compile(r"(?i)(?:example|^your[_-]|x{4}|placeholder|redacted|changeme)")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_.~\-]{8,512}")


def _parts(key: str) -> list[str]:
    return [p.lower() for p in _PARTS.findall(key)]


def _key_class(parts: list[str]) -> str | None:
    if not parts or identifier_key(parts):
        return None
    last, squashed = parts[-1], "".join(parts)
    if last in _PASSWORD_LAST or last.endswith(_PASSWORD_SUFFIX):
        return "password"
    if last in _TOKEN_LAST or squashed.endswith(_TOKEN_SUFFIX) or last.endswith(_TOKEN_SUFFIX):
        # SECRET_KEY, aws_secret_access_key: a secret by name, whatever its alphabet
        return "password" if {"secret", "password"} & set(parts) else "token"
    return None


def _real_value(value: str) -> bool:
    v = value.strip("\"'`")
    if len(v) < 3 or v.lower() in _PLACEHOLDER or len(set(v)) == 1 or "://" in v:
        return False
    return not reference(v) and not public_value(v) and not _EXAMPLE.search(v)


def _token_like(value: str) -> bool:
    v = value.strip("\"'`")
    if not _TOKEN_CHARS.fullmatch(v):
        return False
    has_digit = any(c.isdigit() for c in v)
    has_alpha = any(c.isalpha() for c in v)
    if has_digit and has_alpha:
        return True
    # all letters (or all digits) still count when long and random, as gitleaks' entropy does
    return len(v) >= 20 and entropy(v) >= 3.5


def _matches(text: str) -> Iterator[re.Match[str]]:
    """`_ASSIGN`'s matches, each next search from inside the last one's value
    (`https://host?sig=...` holds a second assignment): tried only where the head
    matches, which it does wherever `_ASSIGN` does, so the first success is the
    match `_ASSIGN.search` finds from there. One pass of the head's scanner: its
    next search starts past a failed try, or inside the value of a match."""
    tried: dict[int, re.Match[str] | None] = {}

    def resume(head: re.Match[str]) -> int:
        m = tried.pop(head.start())
        return head.start() + 1 if m is None else m.start("val")

    for head in _HEAD_SCAN.finditer(text, resume=resume):
        m = tried[head.start()] = _ASSIGN.match(text, head.start())
        if m is not None:
            yield m


def _assignments(text: str) -> Iterator[Assignment]:
    for m in _matches(text):
        parts = _parts(m.group("key"))
        # "minisign public key: ...", "SSH public key = ...": the word before names it
        pre = (m.group("pre") or "").lower()
        yield ([pre, *parts] if pre in _QUALIFIERS else parts), m.group("val")


class Assignments:
    """The text's `key = value`s in order (the key's parts, lower-case; the value), read
    as far as a reader asks and kept: `assigned_in` stops at the first secret, and
    `named_in`, asked only when there was none, reads them again from the start."""

    __slots__ = ("_more", "_seen")

    def __init__(self, text: str) -> None:
        self._seen: list[Assignment] = []
        self._more = _assignments(text)

    def __iter__(self) -> Iterator[Assignment]:
        yield from self._seen
        for found in self._more:
            self._seen.append(found)
            yield found


def assigned(text: str) -> bool:
    return assigned_in(_assignments(text))


def assigned_in(found: Iterable[Assignment]) -> bool:
    """`assigned(text)`, given the text's `Assignments`."""
    for parts, value in found:
        cls = _key_class(parts)
        if cls is None or not _real_value(value):
            continue
        if cls == "password" or _token_like(value):
            return True
    return False


def named(text: str) -> str | None:
    """Kind of the first semi-generic rule whose service names the key of a token-like value."""
    return named_in(text, _assignments(text))


@cache
def _names() -> tuple[tuple[NamedRule, re.Pattern[str]], ...]:
    """Each semi-generic rule with one pattern of its service names (compiled on first use)."""
    return tuple((r, re.compile(alternation(r.names))) for r in rule_set()[1])


def scanners() -> tuple[Scanner, ...]:
    """The scanners of the assignments and cards, with the services' names compiled."""
    _names()
    return _HEAD_SCAN, _CARD_SCAN


def named_in(text: str, found: Iterable[Assignment]) -> str | None:
    """`named(text)`, given the text's `Assignments` (read once for `assigned_in` too).

    A rule counts only when one of its service names occurs anywhere in the text
    (a substring search per name): that is asked last, once per rule, and only of
    a rule that an assignment's key and value already satisfy."""
    live: dict[int, bool] = {}  # rule index -> one of its names occurs in the text
    lowered: str | None = None
    for parts, value in found:
        if not parts or identifier_key(parts):
            continue
        squashed = "".join(parts)
        for i, (rule, names) in enumerate(_names()):
            if (
                names.search(squashed) is not None  # a name in the key
                and rule.value.fullmatch(value)
                and any(c.isdigit() for c in value)
                and any(c.isalpha() for c in value)
                and entropy(value) >= rule.min_entropy
                and _real_value(value)
            ):
                if i not in live:
                    lowered = text.lower() if lowered is None else lowered
                    live[i] = any(n in lowered for n in rule.names)
                if live[i]:
                    return rule.kind
    return None


_CARD = re.compile(r"(?<![0-9])(?<![0-9][ -])[0-9](?:[ -]?[0-9]){12,18}+(?![ -]?[0-9])")
_CARD_SCAN = Scanner(_CARD, shipped=True)  # runs only near digits
_CARD_GAPS = re.compile(r"[ -]")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _card_network(d: str) -> bool:
    n, p2, p4 = len(d), int(d[:2]), int(d[:4])
    return (
        (d[0] == "4" and n in (13, 16, 19))
        or ((51 <= p2 <= 55 or 2221 <= p4 <= 2720) and n == 16)
        or (p2 in (34, 37) and n == 15)
        or ((p4 == 6011 or p2 == 65 or 644 <= int(d[:3]) <= 649) and 16 <= n <= 19)
        or (3528 <= p4 <= 3589 and 16 <= n <= 19)
        or ((300 <= int(d[:3]) <= 305 or p2 in (36, 38, 39)) and 14 <= n <= 19)
        or (p2 == 62 and 16 <= n <= 19)
    )


def card_number(text: str) -> bool:
    for m in _CARD_SCAN.finditer(text):
        digits = _CARD_GAPS.sub("", m.group(0))
        if _card_network(digits) and _luhn(digits):
            return True
    return False
