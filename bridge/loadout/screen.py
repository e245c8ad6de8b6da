"""Screening of text the loadout is asked to keep: secrets, invisible characters, injections.

Pure functions. `screen(text, known_secrets)` returns the reasons a text must
not be stored (empty when it is fine); the reasons name the kind of problem,
never the offending text, so they can go back to the model and into logs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")),
    ("an Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("an OpenAI-style API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("a Stripe key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    (
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    ),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Telegram bot token", re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    (
        "a JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    (
        "a password or key in key=value form",
        re.compile(
            r"(?i)\b(?:password|passwd|passphrase|pwd|secret|api[_-]?key|access[_-]?key|"
            r"auth[_-]?token|token|private[_-]?key|client[_-]?secret)\s*[:=]\s*"
            r"[\"']?[^\s\"',;]{4,}"
        ),
    ),
    ("a URL with a password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]{3,}@")),
)

_INVISIBLE = re.compile(
    "[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u00ad\u061c\u180e\u200b\u200c\u200e\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)

_INJECTION: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(?:previous|prior|above|"
        r"earlier|preceding|all|any|your|the|system)\b[^.\n]{0,30}\b(?:instructions?|prompts?|"
        r"rules|directions|guidelines|guardrails|messages?)\b",
        r"\byou are now\b",
        r"\b(?:new|updated|revised) (?:system )?instructions?\s*:",
        r"\bsystem prompt\b",
        r"\bdeveloper mode\b",
        r"\bdo anything now\b",
        r"\bjailbr(?:eak|oken)\b",
        r"<\|?(?:im_start|im_end|system|endoftext)\|?>",
        r"\[/?(?:INST|SYS)\]",
        r"</?system>",
        r"\b(?:from now on|henceforth),? (?:you|the assistant) (?:must|will|should|shall)\b",
        r"\b(?:reveal|print|show|output|repeat)\b[^.\n]{0,30}\b(?:secrets?|vault|api keys?|"
        r"passwords?)\b",
    )
)


def secret_kinds(text: str) -> list[str]:
    return [kind for kind, pattern in _SECRET_PATTERNS if pattern.search(text)]


def has_invisible(text: str) -> bool:
    return _INVISIBLE.search(text) is not None


def looks_like_injection(text: str) -> bool:
    return any(p.search(text) for p in _INJECTION)


def screen(text: str, known_secrets: Iterable[str] = ()) -> list[str]:
    """Why `text` must not be stored; an empty list means it may be."""
    reasons = [f"it looks like {kind}" for kind in secret_kinds(text)]
    if any(len(value) >= 4 and value in text for value in known_secrets):
        reasons.append("it contains the value of a vault secret")
    if has_invisible(text):
        reasons.append("it contains invisible or bidirectional control characters")
    if looks_like_injection(text):
        reasons.append("it reads like instructions to the assistant rather than a fact")
    return reasons


def refusal(what: str, reasons: list[str]) -> str:
    """One message for the model or the person: what was refused and why, nothing stored."""
    why = "; ".join(reasons)
    return (
        f"Not saved: {what} was refused because {why}. Nothing was written. "
        "Secrets belong in the vault (the operator runs `roost vault set`), never in memory."
    )
