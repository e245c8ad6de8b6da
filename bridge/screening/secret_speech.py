"""How people say a secret in a sentence, English and German (pure functions).

- `said(text)`: "password" when a sentence states one ("my password is
  Tr0ub4dor&3", "mein WLAN-Passwort lautet Sommer2024!", "Kennwort: ...",
  "Zugangsdaten: anna / Sonne123!"), "pin" for a PIN, PUK, door or safe code,
  CVC ("die PIN ist 4711", "Türcode 2580#" ...), "seed-phrase" for a wallet
  recovery phrase (12 to 24 lower-case words after "seed phrase",
  "Wiederherstellungsphrase", "mnemonic" ...).

A keyword is looked for as a word of its own or as the end of a compound
(`Routerpasswort`, `WLAN-Kennwort`); the value is the word right after it or
after a linking word ("is", "ist", "lautet", ":"), in a bounded window.
References (`os.environ[...]`, `${X}`), paths and ordinary words are not values.
"""

from __future__ import annotations

import re

from bridge.screening.public_shapes import reference
from bridge.screening.windowed import Scanner

# A keyword stands in prose: after a space, start, quote or dash; before a space or
# punctuation (never inside a base64 blob or a path: `+pw/`, `/pass/`).
_BEFORE = r"(?<![^\s\"'(\[{,;.!?-])"
_AFTER = r"(?=[\s:=,.;!?)\]\"'-]|$)"
# Long keywords also end compounds (Routerpasswort, WLAN-Kennwort, Tresorcode), so they
# need no boundary before them; short ones (pw, pin) must stand as words.
_PASSWORD_WORD = re.compile(
    r"(?i)(?:(?<![_0-9])(?:password|passwort|kennwort|passcode|passphrase|passwd)|"
    + _BEFORE
    + r"(?:pass|pw"
    r"|pwd|zugangsdaten|anmeldedaten|logindaten|login-daten|credentials|creds|login"
    r"|wlan-schlüssel|wlan-key|wifi-key|netzwerkschlüssel))" + _AFTER
)
_PIN_WORD = re.compile(
    r"(?i)(?:(?<![_0-9])(?:pincode|geheimzahl|türcode|zugangscode|alarmcode|tresorcode|torcode|entsperrcode"
    r"|sicherheitscode|kartenprüfnummer)|" + _BEFORE + r"(?:pin|pin-code|puk|passcode|door code"
    r"|alarm code|safe code|gate code|garage code|unlock code|security code|cvc|cvv|cvc2|cvv2"
    r"|prüfziffer))" + _AFTER
)
_SEED_WORD = re.compile(
    r"(?i)" + _BEFORE + r"(?:seed phrase|seed-phrase|seedphrase|seed words|recovery phrase"
    r"|secret recovery phrase|mnemonic|wiederherstellungsphrase|wiederherstellungswörter"
    r"|backup phrase)" + _AFTER
)
# each runs only near its keywords (case-folded as `re` folds them)
_PASSWORD_SCAN, _PIN_SCAN, _SEED_SCAN = (
    Scanner(p, shipped=True) for p in (_PASSWORD_WORD, _PIN_WORD, _SEED_WORD)
)
_LINKERS = frozenset(
    "is was ist lautet lautete heißt heisst war are sind = -> - – lauten".split()  # noqa: SIM905
)
_WEAK_LINKERS = frozenset("be to auf zu".split())  # noqa: SIM905
_NOT_A_VALUE = frozenset(
    """a an the my your our his her their this that it its in on at of for to from with by as
    too not no never still also very only just now again here there somewhere stored saved
    expired weak strong wrong correct incorrect invalid required missing same different
    changed reset long short secure safe unsafe insecure case sensitive empty blank set
    managed locked written hidden easy hard simple complicated forgotten lost known new old
    and or but because so then secret private unknown please page screen form field manager
    zu nicht nie kein keine noch auch sehr nur jetzt hier dort irgendwo gespeichert
    abgelaufen falsch richtig schwach stark sicher unsicher geändert leer lang kurz
    gesperrt vergessen verloren bekannt neu alt einfach schwer im in auf unter bei der die
    das den dem des ein eine einen mein meine dein deine sein seine unser für von mit
    und oder aber weil dann geheim privat unbekannt bitte seite feld maske ändern
    manager reset recovery policy rules hint change""".split()  # noqa: SIM905
)
_WORD = re.compile(r"\S{1,200}")
_SENTENCE_END = re.compile(r"\n\s*\n|[.!?](?:\s|$)")
_TRIM = ".,;!?()[]{}<>\"'`“”„«»"
_SEED_RUN = re.compile(r"(?:[a-z]{3,8}[ \t,]{1,3}){11,23}[a-z]{3,8}(?![a-z])")
_SEED_GAPS = re.compile(r"[ \t,]+")
_DIGITS = re.compile(r"[0-9]{1,12}")  # a PIN or code (`_digits` asks for its least length)


def _candidates(window: str) -> list[tuple[str, bool]]:
    """(token, direct): the token right after the keyword (direct), and each token
    right after a linking word or a colon."""
    out: list[tuple[str, bool]] = []
    take, direct = True, True
    end = _SENTENCE_END.search(window, 0, 120)
    for i, raw in enumerate(_WORD.findall(window[: end.start() if end else 120])[:12]):
        w = raw.strip(_TRIM)
        low = w.lower()
        if not w:  # punctuation only: "?" and "-" lead to a value, a bracket does not
            take, direct = raw.strip() in ("?", "-", "–", "/"), False
            continue
        weak = low in _WEAK_LINKERS and i < 3  # "will be X", "changed it to X", not far off
        if low in _LINKERS or weak or w in (":", "->", "/") or w.endswith(":"):
            take, direct = True, False
            continue
        if take and raw[0] not in "[<{":  # [value], <password>, {{ x }}: placeholders
            out.append((w, direct))
        take, direct = False, False
    return out


def _password_like(word: str, direct: bool) -> bool:
    if len(word) < 4 or word.lower() in _NOT_A_VALUE or reference(word) or "://" in word:
        return False
    if word.startswith("-"):  # a command-line flag (`--user u:pass --digest`)
        return False
    if not direct:
        return True
    has_upper_inside = any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)
    return any(c.isdigit() or not c.isalnum() for c in word) or has_upper_inside


def _strong(word: str) -> bool:
    """A word that can only be a password: letters and digits or symbols, not an address."""
    if len(word) < 6 or "@" in word or "://" in word or reference(word):
        return False
    return any(c.isalpha() for c in word) and any(c.isdigit() or not c.isalnum() for c in word)


_LOGIN_WORDS = ("zugangsdaten", "anmeldedaten", "logindaten", "login-daten", "credentials",
                "creds", "login")  # fmt: skip


def scanners() -> tuple[Scanner, ...]:
    """The scanners of the password, PIN and recovery-phrase words."""
    return _PASSWORD_SCAN, _PIN_SCAN, _SEED_SCAN


def said(text: str) -> str | None:
    """ "password", "pin" or "seed-phrase" if a sentence states one."""
    for m in _PASSWORD_SCAN.finditer(text):
        window = text[m.end() : m.end() + 160]
        if m.group(0).lower() in _LOGIN_WORDS:
            # "Zugangsdaten: anna / Sonne123!": a user name, then a password-only word
            if any(_strong(w) for w, _ in _candidates(window)):
                return "password"
            continue
        if any(_password_like(w, direct) for w, direct in _candidates(window)):
            return "password"
    for m in _PIN_SCAN.finditer(text):
        window = text[m.end() : m.end() + 160]
        shortest = 3 if m.group(0).lower().startswith(_CARD_CODES) else 4
        if any(_digits(w, shortest) for w, _ in _candidates(window)):
            return "pin"
    for m in _SEED_SCAN.finditer(text):
        run = _SEED_RUN.search(text, m.end(), m.end() + 260)
        if run and _FUNCTION_WORDS.isdisjoint(_SEED_GAPS.split(run.group(0))):
            return "seed-phrase"
    return None


_CARD_CODES = ("cvc", "cvv", "kartenpr", "prüfz")
# Common words of prose that are not in the BIP-39 English word list: a run that
# holds one is a sentence, not a recovery phrase.
_FUNCTION_WORDS = frozenset(
    """the and you your with that this are was for not but have has had will would should
    could can our their them they she him his her its from into than then there here when
    what which who why how been being were does did done der die das und ist nicht ich
    ein eine mit auf für von""".split()  # noqa: SIM905
)


def _digits(word: str, shortest: int) -> bool:
    digits = word.rstrip("#")
    return len(digits) >= shortest and _DIGITS.fullmatch(digits) is not None
