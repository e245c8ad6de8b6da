"""Which provider-shaped credentials a text holds (pure functions).

`provider_kinds(text)` returns kind ids (`"github-token"`, `"stripe-key"`, ...)
of the shape rules in `secret_rules.toml` (see `rule_data`); `LABELS[kind]`
says it in words for a refusal. Nothing here returns or logs the matched value.

Cost stays linear in the text: the lower-cased text is searched once per
distinct keyword (a substring search), and only rules whose keyword occurs run
their pattern; every pattern starts at a run boundary and repeats a bounded
number of times, so each run of characters is tried once per rule.
"""

from __future__ import annotations

from bridge.screening.public_shapes import entropy
from bridge.screening.rule_data import LABELS, NAMED, RULES, NamedRule, Rule

__all__ = ["LABELS", "NAMED", "RULES", "NamedRule", "Rule", "provider_kinds"]


def _index(rules: tuple[Rule, ...]) -> dict[str, tuple[int, ...]]:
    out: dict[str, list[int]] = {}
    for i, rule in enumerate(rules):
        for k in rule.keywords:
            out.setdefault(k, []).append(i)
    return {k: tuple(v) for k, v in out.items()}


_BY_KEYWORD = _index(RULES)


def provider_kinds(text: str) -> list[str]:
    lowered = text.lower()
    candidates: set[int] = set()
    for keyword, indices in _BY_KEYWORD.items():
        if keyword in lowered:
            candidates.update(indices)
    kinds: list[str] = []
    for i in sorted(candidates):
        rule = RULES[i]
        if rule.kind not in kinds and _matches(rule, text):
            kinds.append(rule.kind)
    return kinds


def _matches(rule: Rule, text: str) -> bool:
    if not rule.entropy:
        return rule.pattern.search(text) is not None
    # like gitleaks: a low-entropy match (AKIAXXXXXXXXXXXXXXXX) is a placeholder
    return any(entropy(m.group(0)) >= rule.entropy for m in rule.pattern.finditer(text))
