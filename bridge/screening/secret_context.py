"""Secrets without a shape of their own: read from the words around them (pure functions).

- `assigned(text)`: a value after a secret-naming key in .env, shell, YAML, INI,
  JSON, XML or properties lines (`DB_PASSWORD=`, `aws_secret_access_key = `,
  `AccountKey=`, `"client_secret": `), in any case and after `_`, `.`, `-`.
- `card_number(text)`: 13-19 digits with a card network's prefix that pass Luhn.
- `said(text)`: how people say a password or PIN in a sentence, English and German.

Each scan is one pass of a pattern that cannot start inside its own run of
characters, plus a bounded look at a window after each hit.
"""

from __future__ import annotations

import re

_ASSIGN = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<key>[A-Za-z][A-Za-z0-9_.\-]{0,63}+)[\"'\]]?[ \t]{0,8}"
    r"(?:=>|:=|=|:|>)[ \t]{0,8}[\"'`]?(?P<val>[^\s\"'`,;<>]{1,512}+)"
)
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# A key whose last part is one of these holds a password: any real value counts.
_PASSWORD_LAST = frozenset(
    "password passwd pwd pass passphrase passwort kennwort secret pw credentials".split()  # noqa: SIM905
)
_PASSWORD_SUFFIX = ("password", "passwd", "passphrase", "passwort", "kennwort", "secret")
# A key whose last part is one of these holds a token: the value must look like one.
_TOKEN_LAST = frozenset("key token sig signature auth credential apikey sas".split())  # noqa: SIM905
_TOKEN_SUFFIX = ("apikey", "accesskey", "accountkey", "secretkey", "authtoken", "accesstoken",
                 "apitoken", "privatekey", "authkey", "clientsecret")  # fmt: skip
_NOT_SECRET_PARTS = frozenset("public pub".split())  # noqa: SIM905
_PLACEHOLDER = frozenset(
    """true false null none nil yes no required optional empty blank string str text hidden
    redacted placeholder example changeme_later your_password xxx undefined env secret
    password token key value""".split()  # noqa: SIM905
)
_CODE_REF = re.compile(
    r"(?i)^(?:os\.environ|os\.getenv|process\.env|env\(|getenv|config\[|settings\.)"
)
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_.~\-]{8,512}")


def _key_class(key: str) -> str | None:
    parts = [p.lower() for p in _PARTS.findall(key)]
    if not parts or _NOT_SECRET_PARTS & set(parts):
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
    if len(v) < 3 or v.lower() in _PLACEHOLDER or len(set(v)) == 1:
        return False
    return v[0] not in "$%{<[(" and not _CODE_REF.match(v)


def _token_like(value: str) -> bool:
    v = value.strip("\"'`")
    if not _TOKEN_CHARS.fullmatch(v):
        return False
    has_digit = any(c.isdigit() for c in v)
    has_alpha = any(c.isalpha() for c in v)
    return has_digit and has_alpha and (len(v) >= 8 if len(v) < 20 else True)


def assigned(text: str) -> bool:
    pos = 0
    while (m := _ASSIGN.search(text, pos)) is not None:
        # resume inside the value: `https://host?sig=...` holds a second assignment
        pos = m.start("val")
        cls = _key_class(m.group("key"))
        value = m.group("val")
        if cls is None or not _real_value(value):
            continue
        if cls == "password" or _token_like(value):
            return True
    return False


_CARD = re.compile(r"(?<![0-9])(?<![0-9][ -])[0-9](?:[ -]?[0-9]){12,18}+(?![ -]?[0-9])")


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
    for m in _CARD.finditer(text):
        digits = re.sub(r"[ -]", "", m.group(0))
        if _card_network(digits) and _luhn(digits):
            return True
    return False


# A keyword stands in prose: after a space, start, quote or dash; before a space or
# punctuation (never inside a base64 blob or a path: `+pw/`, `/pass/`).
_BEFORE = r"(?<![^\s\"'(\[{,;:.!?-])"
_AFTER = r"(?=[\s:=,.;!?)\]\"'-]|$)"
_PASSWORD_WORD = re.compile(
    r"(?i)" + _BEFORE + r"(?:wlan-|wifi-|wi-fi-)?(?:password|passwort|kennwort|passcode|"
    r"passphrase|pass|pw|pwd)" + _AFTER
)
_PIN_WORD = re.compile(
    r"(?i)" + _BEFORE + r"(?:pin|pin-code|pincode|geheimzahl|passcode|door code|türcode|"
    r"zugangscode|alarm code|alarmcode|safe code|tresorcode|gate code|garage code)" + _AFTER
)
_LINKERS = frozenset("is was ist lautet lautete heißt war wird be to are sind = -> - –".split())  # noqa: SIM905
_NOT_A_VALUE = frozenset(
    """a an the my your our his her their this that it its in on at of for to from with by as
    too not no never still also very only just now again here there somewhere stored saved
    expired weak strong wrong correct incorrect invalid required missing same different
    changed reset long short secure safe unsafe insecure case sensitive empty blank set
    managed locked written hidden easy hard simple complicated forgotten lost known new old
    and or but because so then
    zu nicht nie kein keine noch auch sehr nur jetzt hier dort irgendwo gespeichert
    abgelaufen falsch richtig schwach stark sicher unsicher geändert leer lang kurz
    gesperrt vergessen verloren bekannt neu alt einfach schwer im in auf unter bei der die
    das den dem des ein eine einen mein meine dein deine sein seine unser für von mit
    und oder aber weil dann
    manager reset recovery policy rules hint change""".split()  # noqa: SIM905
)
_WORD = re.compile(r"\S{1,200}")
_TRIM = ".,;!?()[]{}<>\"'`“”„«»"


def _candidates(window: str) -> list[tuple[str, bool]]:
    """(token, direct): the token right after the keyword (direct), and each token
    right after a linking word or a colon."""
    out: list[tuple[str, bool]] = []
    take, direct = True, True
    for raw in _WORD.findall(window[:120])[:12]:
        w = raw.strip(_TRIM)
        low = w.lower()
        if not w:  # punctuation only: "?" and "-" lead to a value, a bracket does not
            take, direct = raw.strip() in ("?", "-", "–"), False
            continue
        if low in _LINKERS or w in (":", "->") or w.endswith(":"):
            take, direct = True, False
            continue
        if take:
            out.append((w, direct))
        take, direct = False, False
    return out


def _password_like(word: str, direct: bool) -> bool:
    if len(word) < 4 or word.lower() in _NOT_A_VALUE or word[0] in "$%{<[(":
        return False
    if not direct:
        return True
    has_upper_inside = any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)
    return any(c.isdigit() or not c.isalnum() for c in word) or has_upper_inside


def said(text: str) -> str | None:
    """ "password" or "pin" if a sentence states one."""
    for m in _PASSWORD_WORD.finditer(text):
        window = text[m.end() : m.end() + 160]
        if any(_password_like(w, direct) for w, direct in _candidates(window)):
            return "password"
    for m in _PIN_WORD.finditer(text):
        window = text[m.end() : m.end() + 160]
        if any(re.fullmatch(r"\d{4,12}", w) for w, _ in _candidates(window)):
            return "pin"
    return None
