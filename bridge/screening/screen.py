"""Screening of text the loadout is asked to keep: secrets, invisible characters, injections.

Pure functions. `screen(text, known_secrets)` returns the reasons a text must
not be stored (empty when it is fine); the reasons name the kind of problem,
never the offending text, so they can go back to the model and into logs.

Secrets are looked for in the NFKC form with hidden code points removed (so
full-width or zero-width-split tokens are still seen); instructions in the
skeleton (combining marks dropped, look-alike letters folded, casefolded), so
`i\\u0307gnore previous instructions` reads as what it says. The rules are in
`secret_rules.toml` (provider shapes with their public sources, read by
`rule_data`), `secret_context` (key=value, named services, cards),
`secret_speech` (sentences, English and German) and `injection` (instructions
in ten languages); what is public on purpose is in `public_shapes`; the
Unicode work is in `unicode_clean`. The rule modules are imported on the first
screening, not with this module: a command that never screens (`roost send /help`,
`roost vault`, `roost export`) does not load them (`bridge.screening.prepare` builds
them ahead of the first message in a daemon).
"""

from __future__ import annotations

from collections.abc import Iterable

from bridge.screening.unicode_clean import clean, describe_found, invisible

__all__ = ["has_invisible", "looks_like_injection", "refusal", "screen", "secret_kinds"]


def secret_kinds(text: str) -> list[str]:
    """Kind ids of the credentials `text` holds (see `secret_rules.labels()`)."""
    return _secret_kinds_in_clean(clean(text))


def looks_like_injection(text: str) -> bool:
    """`bridge.screening.injection.looks_like_injection` (imported on first use)."""
    from bridge.screening.injection import looks_like_injection as looks

    return looks(text)


def _secret_kinds_in_clean(normal: str) -> list[str]:
    from bridge.screening import secret_context, secret_speech
    from bridge.screening.secret_rules import provider_kinds

    kinds = provider_kinds(normal)
    found = secret_context.Assignments(normal)  # read once: `assigned` and `named` both ask
    if secret_context.assigned_in(found):
        kinds.append("assigned-secret")
    service = None if kinds else secret_context.named_in(normal, found)
    if service:
        kinds.append(service)
    if secret_context.card_number(normal):
        kinds.append("card-number")
    spoken = secret_speech.said(normal)
    if spoken:
        kinds.append(spoken)
    return kinds


def has_invisible(text: str) -> bool:
    return bool(invisible(text))


def _holds(forms: tuple[str, str], values: Iterable[str]) -> bool:
    return any(len(v) >= 4 and any(v in form for form in forms) for v in values)


def screen(text: str, known_secrets: Iterable[str] = ()) -> list[str]:
    """Why `text` must not be stored; an empty list means it may be."""
    from bridge.screening.injection import looks_like_injection_in_clean
    from bridge.screening.secret_rules import labels

    normal = clean(text)  # once: the secret, vault and injection checks all read it
    kind_labels = labels()
    reasons = [f"it looks like {kind_labels[kind]}" for kind in _secret_kinds_in_clean(normal)]
    if _holds((text, normal), known_secrets):
        reasons.append("it contains the value of a vault secret")
    hidden = invisible(text)
    if hidden:
        reasons.append(
            "it contains invisible or bidirectional control characters "
            f"({describe_found(text, hidden)})"
        )
    if looks_like_injection_in_clean(normal):
        reasons.append("it reads like instructions to the assistant rather than a fact")
    return reasons


def refusal(what: str, reasons: list[str]) -> str:
    """One message for the model or the person: what was refused and why, nothing stored."""
    why = "; ".join(reasons)
    return (
        f"Not saved: {what} was refused because {why}. Nothing was written. "
        "Secrets belong in the vault (the operator runs `roost vault set`), never in memory."
    )
