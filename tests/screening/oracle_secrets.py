"""The secret screen as it was written before its gates: the oracle of the differential test.

A frozen copy (2026-12-03, session 16) of what `screen.secret_kinds` decides, in
its plainest form: every keyword and service name looked for with `in` on the
lower-cased text, every pattern run by `re` itself on the whole text (no
`windowed.Scanner`, no `word_gate.Words` (as it was then), no keyword index), `assigned` and
`named` each reading the assignments on their own. The helpers that read one
hit (`_key_class`, `_real_value`, `_token_like`, `_candidates`, ...) are the
screen's own: they look at a short string, no gate stands in front of them.
The rules themselves come from `secret_rules.toml` (the same data).
Each decision is remembered per text (`_memo`): the differential test asks the
oracle about one cleaned text several times (each part, then `secret_kinds`,
which asks each part again); a pure function of its text, it answers alike.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterator
from typing import TypeVar

from bridge.screening import secret_context as ctx
from bridge.screening import secret_speech as speech
from bridge.screening.public_shapes import entropy, identifier_key
from bridge.screening.rule_data import rule_set
from bridge.screening.unicode_clean import clean

_T = TypeVar("_T")


def _memo(decide: Callable[[str], _T]) -> Callable[[str], _T]:
    """`decide`, remembered per text (`functools.lru_cache`, the last 4096 texts); a list
    is handed out as a copy, so a caller changing it changes no later answer."""
    cached = functools.lru_cache(maxsize=4096)(decide)

    @functools.wraps(decide)
    def remembered(text: str) -> _T:
        return copy.copy(cached(text))

    return remembered


@_memo
def provider_kinds(text: str) -> list[str]:
    rules = rule_set()[0]
    lowered = text.lower()
    kinds: list[str] = []
    for rule in rules:
        if rule.kind in kinds or not any(k in lowered for k in rule.keywords):
            continue
        if rule.entropy:
            hit = any(entropy(m.group(0)) >= rule.entropy for m in rule.pattern.finditer(text))
        else:
            hit = rule.pattern.search(text) is not None
        if hit:
            kinds.append(rule.kind)
    return kinds


def _assignments(text: str) -> Iterator[tuple[list[str], str]]:
    pos = 0
    while pos <= len(text) and (m := ctx._ASSIGN.search(text, pos)) is not None:
        parts = ctx._parts(m.group("key"))
        pre = (m.group("pre") or "").lower()
        yield ([pre, *parts] if pre in ctx._QUALIFIERS else parts), m.group("val")
        pos = m.start("val")


@_memo
def assigned(text: str) -> bool:
    for parts, value in _assignments(text):
        cls = ctx._key_class(parts)
        if cls is None or not ctx._real_value(value):
            continue
        if cls == "password" or ctx._token_like(value):
            return True
    return False


@_memo
def named(text: str) -> str | None:
    lowered = text.lower()
    live = [r for r in rule_set()[1] if any(n in lowered for n in r.names)]
    if not live:
        return None
    for parts, value in _assignments(text):
        if not parts or identifier_key(parts):
            continue
        squashed = "".join(parts)
        for rule in live:
            if (
                any(n in squashed for n in rule.names)
                and rule.value.fullmatch(value)
                and any(c.isdigit() for c in value)
                and any(c.isalpha() for c in value)
                and entropy(value) >= rule.min_entropy
                and ctx._real_value(value)
            ):
                return rule.kind
    return None


@_memo
def card_number(text: str) -> bool:
    for m in ctx._CARD.finditer(text):
        digits = re.sub(r"[ -]", "", m.group(0))
        if ctx._card_network(digits) and ctx._luhn(digits):
            return True
    return False


@_memo
def said(text: str) -> str | None:
    for m in speech._PASSWORD_WORD.finditer(text):
        window = text[m.end() : m.end() + 160]
        if m.group(0).lower() in speech._LOGIN_WORDS:
            if any(speech._strong(w) for w, _ in speech._candidates(window)):
                return "password"
            continue
        if any(speech._password_like(w, direct) for w, direct in speech._candidates(window)):
            return "password"
    for m in speech._PIN_WORD.finditer(text):
        window = text[m.end() : m.end() + 160]
        shortest = 3 if m.group(0).lower().startswith(speech._CARD_CODES) else 4
        if any(speech._digits(w, shortest) for w, _ in speech._candidates(window)):
            return "pin"
    for m in speech._SEED_WORD.finditer(text):
        run = speech._SEED_RUN.search(text, m.end(), m.end() + 260)
        if run and speech._FUNCTION_WORDS.isdisjoint(re.split(r"[ \t,]+", run.group(0))):
            return "seed-phrase"
    return None


@_memo
def secret_kinds(text: str) -> list[str]:
    """`screen.secret_kinds` as it was decided before its gates."""
    normal = clean(text)
    kinds = provider_kinds(normal)
    if assigned(normal):
        kinds.append("assigned-secret")
    service = named(normal)
    if service and not kinds:
        kinds.append(service)
    if card_number(normal):
        kinds.append("card-number")
    spoken = said(normal)
    if spoken:
        kinds.append(spoken)
    return kinds
