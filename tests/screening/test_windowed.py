"""A Scanner finds exactly what its pattern finds, for every pattern of the screen.

`windowed.Scanner` runs a pattern only near the literals every match holds
(`regex_shape`). Here each screening pattern (the secret rules, the
semi-generic value shapes, key=value, cards, how people say a secret, the
injection patterns) and a set of patterns built to stress the cut (lookaheads
that read far past a match, `$`, `\\Z`, `\\b`, lookbehinds, IGNORECASE with the
characters `re` folds specially, backreferences, empty matches) is run plain
and through a Scanner on seeded generated texts, short and long, made of
the pattern's own literals in mixed case, public corpus rows, token-alphabet
runs and separators: `finditer`, `search` from random positions and
`finditer` with a resume position must give the same spans. The generator
must also produce matches, or the comparison would prove nothing.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from bridge.screening import injection, secret_context, secret_speech
from bridge.screening.regex_shape import shape
from bridge.screening.rule_data import rule_set
from bridge.screening.windowed import Scanner, fold

CORPUS = Path(__file__).parent / "corpus"
ROWS = [
    json.loads(line)["text"]
    for name in ("secrets", "harmless", "injections", "benign")
    for line in (CORPUS / f"{name}.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]


def _screen_patterns() -> list[re.Pattern[str]]:
    rules, named, _ = rule_set()
    return [
        *(r.pattern for r in rules),
        *(r.value for r in named),
        secret_context._ASSIGN,
        secret_context._CARD,
        secret_speech._PASSWORD_WORD,
        secret_speech._PIN_WORD,
        secret_speech._SEED_WORD,
        *injection.PATTERNS,
    ]


STRESS = [
    r"ab(?=[\s\S]{0,300}z)",  # a lookahead that reads far past the match
    r"key(?![\s\S]{0,200}end)",
    r"ab$",
    r"ab\Z",
    r"(?m)^ab$",
    r"\bkey\b",
    r"(?<=xxx)key",
    r"(?<![a-z])ghp_[A-Za-z0-9]{10,40}(?![A-Za-z0-9])",
    r"(?i)straße|strasse",
    r"(?i)σοφία",
    r"(?i)ıi|ſs|kelvin",
    r"(?i:kelvin)K",
    r"(?i)[a-c]{2}xyz",
    r"(a)x\1",  # a backreference: never windowed
    r"x*",  # matches empty: never windowed
    r"(?:foo|bar){2,3}baz",
    r"(?>ab|a)c",
    r"a++b",
    r"[0-9]{4}-[0-9]{4}",
    r"(?s)begin.{0,200}end",
    r"(?x) a b  c  # verbose",
    r"x.{0,8000}y",  # wider than a span gathers
    r"q.{0,9000}w",  # too wide: never windowed
]
STRESS_FILL = "abcxyzKkıiſsSΣσςοφίαİ ­\n.-_0123456789 key end begin foo bar baz ghp_ z q w"

R = random.Random(2026)


def _text(pattern: re.Pattern[str], size: int, extra: str = "") -> str:
    s = shape(pattern)
    literals = sorted(s.literals.union(*s.also)) or ["x"]
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789_-=:./" + extra
    parts: list[str] = []
    n = 0
    while n < size:
        k = R.random()
        if k < 0.25:
            part = R.choice(ROWS)
        elif k < 0.5:
            part = "".join(c.upper() if R.random() < 0.3 else c for c in R.choice(literals))
        elif k < 0.6:
            part = "".join(R.choices("ſıİKΣσςÅµ" + extra + "abc ", k=R.randint(1, 5)))
        elif k < 0.85:
            part = "".join(R.choices(alphabet, k=R.randint(1, 60)))
        else:
            part = R.choice([" ", "\n", ". ", ", ", "  ", "\t", "\n\n"])
        parts.append(part)
        n += len(part)
    return "".join(parts)


def _spans(matches: object) -> list[tuple[int, int]]:
    return [m.span() for m in matches]  # type: ignore[attr-defined]


def _resumed(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    # `re` clamps a start past the end to the end: stop there, or an empty match repeats
    while pos <= len(text) and (m := pattern.search(text, pos)) is not None:
        out.append(m.span())
        pos = m.start() + 1
    return out


def _compare(pattern: re.Pattern[str], text: str) -> int:
    scan = Scanner(pattern)
    plain = _spans(pattern.finditer(text))
    assert _spans(scan.finditer(text)) == plain, (pattern.pattern[:60], len(text))
    for pos in [0, *R.sample(range(len(text) + 1), 3)]:
        a, b = pattern.search(text, pos), scan.search(text, pos)
        assert (a and a.span()) == (b and b.span()), (pattern.pattern[:60], pos)
    resumed = _spans(scan.finditer(text, resume=lambda m: m.start() + 1))
    assert resumed == _resumed(pattern, text), pattern.pattern[:60]
    return len(plain)


@pytest.mark.parametrize("size", [120, 1500, 7000, 30_000])
def test_every_screen_pattern_finds_the_same_matches(size: int) -> None:
    found = 0
    patterns = _screen_patterns()
    for pattern in patterns:
        for _ in range(3 if size < 30_000 else 1):
            found += _compare(pattern, _text(pattern, size))
    print(size, found)
    # the texts hold matches, or nothing was compared (120 characters hold few)
    assert found > (len(patterns) if size > 120 else 10)


@pytest.mark.parametrize("size", [200, 3000, 40_000])
def test_stress_patterns_find_the_same_matches(size: int) -> None:
    found = 0
    for source in STRESS:
        pattern = re.compile(source)
        for _ in range(3):
            found += _compare(pattern, _text(pattern, size, STRESS_FILL))
    print(size, found)
    assert found > 3 * len(STRESS)


def test_cuts_next_to_a_match_change_nothing() -> None:
    # a literal right at a span's edge, with what decides the match just past the cut
    pattern = re.compile(r"ab(?=[\s\S]{0,300}z)")
    for gap in range(280, 320):
        text = "." * 5000 + "ab" + "." * gap + "z" + "." * 5000
        assert _spans(Scanner(pattern).finditer(text)) == _spans(pattern.finditer(text))
    boundary = re.compile(r"\bkey\b")
    for tail in ("", "s", " ", "_", "\n"):
        for head in ("", "a", " "):
            text = "x " * 4000 + head + "key" + tail
            a, b = boundary.search(text), Scanner(boundary).search(text)
            assert (a and a.span()) == (b and b.span()), (head, tail)


def test_the_screen_patterns_mostly_run_windowed() -> None:
    # most patterns promise a literal, so long text is scanned near it only
    patterns = _screen_patterns()
    windowed = [p for p in patterns if shape(p).literals and shape(p).width <= 8192]
    assert len(windowed) >= len(patterns) - 10


def test_every_match_holds_a_promised_literal_of_each_set() -> None:
    # what the windows rely on, checked on the matches themselves
    for pattern in [*_screen_patterns(), *map(re.compile, STRESS)]:
        s = shape(pattern)
        if not s.literals:
            continue
        caseless = s.caseless
        text = _text(pattern, 4000, STRESS_FILL)
        for m in pattern.finditer(text):
            seen = fold(m.group(0)) if caseless else m.group(0)
            if seen is None:
                continue
            for literals in (s.literals, *s.also):
                wanted = {fold(lit) if caseless else lit for lit in literals}
                assert any(w is not None and w in seen for w in wanted), (pattern.pattern, m)


def test_fold_is_how_re_compares_without_case() -> None:
    # each character folds to what `re` with IGNORECASE treats it as equal to
    for ch in map(chr, range(0x3000)):
        folded = fold(ch)
        if folded is None:
            continue
        assert re.fullmatch(re.escape(folded), ch, re.IGNORECASE), f"U+{ord(ch):04X}"
    assert fold("İstanbul") == "istanbul"
    assert fold("ſtraße KELVIN Σ") == fold("straße kelvin σ")
