"""Which provider-shaped credentials a text holds (pure functions).

`provider_kinds(text)` returns kind ids (`"github-token"`, `"stripe-key"`, ...)
of the shape rules in `secret_rules.toml` (see `rule_data`); `labels()[kind]`
says it in words for a refusal. Nothing here returns or logs the matched value.

Cost stays linear in the text: the keywords are looked for together
(`keyword_gate.Keywords`: those with a mark such as `_` or `-` only in the
runs of the text that hold one), and only rules whose keyword occurs run
their pattern, and only near the literals every match of it holds
(`windowed.Scanner`); every pattern starts at a run boundary and repeats a
bounded number of times, so each run of characters is tried once per rule.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from bridge.screening import rule_data
from bridge.screening.keyword_gate import Keywords
from bridge.screening.public_shapes import entropy
from bridge.screening.rule_data import NamedRule, Rule, rule_set
from bridge.screening.windowed import Scanner

# also `RULES`, `NAMED`, `LABELS` (module `__getattr__`: compiled when first asked for)
__all__ = ["NamedRule", "Rule", "labels", "provider_kinds", "scanners"]


def labels() -> dict[str, str]:
    """Kind id -> how a refusal says it."""
    return rule_set()[2]


@cache
def _compiled() -> tuple[dict[str, tuple[int, ...]], Keywords, tuple[Scanner, ...]]:
    """Rule indices by keyword, the keywords' gate and each rule's scanner (built on
    first use)."""
    rules = rule_set()[0]
    by_keyword: dict[str, list[int]] = {}
    for i, rule in enumerate(rules):
        for k in rule.keywords:
            by_keyword.setdefault(k, []).append(i)
    scanners = tuple(Scanner(r.pattern, shipped=True) for r in rules)
    gate = Keywords(by_keyword, shipped=True)
    return {k: tuple(v) for k, v in by_keyword.items()}, gate, scanners


def scanners() -> tuple[Scanner, ...]:
    """Each rule's scanner, with the rules and the keywords' gate (built on first use)."""
    return _compiled()[2]


def provider_kinds(text: str) -> list[str]:
    rules = rule_set()[0]
    by_keyword, keywords, scanners = _compiled()
    candidates: set[int] = set()
    for keyword in keywords.present(text.lower()):
        candidates.update(by_keyword[keyword])
    kinds: list[str] = []
    for i in sorted(candidates):
        rule = rules[i]
        if rule.kind not in kinds and _matches(rule, scanners[i], text):
            kinds.append(rule.kind)
    return kinds


def _matches(rule: Rule, scan: Scanner, text: str) -> bool:
    if not rule.entropy:
        return scan.search(text) is not None
    # like gitleaks: a low-entropy match (AKIAXXXXXXXXXXXXXXXX) is a placeholder
    return any(entropy(m.group(0)) >= rule.entropy for m in scan.finditer(text))


def __getattr__(name: str) -> Any:
    """`RULES`, `NAMED`, `LABELS`, as in `rule_data` (compiled when first asked for)."""
    return getattr(rule_data, name)
