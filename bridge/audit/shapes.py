"""Recognise values that look like secrets or prose (pure functions).

Used by the redactor: a value that looks like an API key, a bearer token, a
JWT, a PEM private key, a credential-bearing URL or a long random string is
never written to the audit chain, whatever key it arrives under.
"""

from __future__ import annotations

import math
import re
from collections import Counter

_SECRET_PATTERNS = [
    r"\b(?:sk|rk|pk)[-_](?:live_|test_|proj-|ant-)?[A-Za-z0-9_-]{12,}",  # OpenAI, Stripe, Anthropic
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bglpat-[A-Za-z0-9_-]{16,}",  # GitLab
    r"\bxox[abposr]-[A-Za-z0-9-]{8,}",  # Slack
    r"\bxapp-[A-Za-z0-9-]{8,}",
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bAIza[0-9A-Za-z_-]{30,}",  # Google API keys
    r"\bya29\.[0-9A-Za-z_-]{10,}",  # Google OAuth
    r"\bhf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"\bnpm_[A-Za-z0-9]{30,}",
    r"\bpypi-[A-Za-z0-9_-]{20,}",
    r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",  # SendGrid
    r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",  # JWT header.payload
    r"-----BEGIN [A-Z ]*PRIVATE KEY",
    r"\b\d{6,12}:[A-Za-z0-9_-]{30,}",  # Telegram bot token
    r"(?i:\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,})",
    r"://[^/\s:@]+:[^/\s@]+@",  # URL with user:password
    r"(?i:\b(?:password|passwd|pwd|secret|token|api[_-]?key|accountkey)\s*[=:])",
]
_SECRET_RE = re.compile("|".join(f"(?:{p})" for p in _SECRET_PATTERNS))
_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_HEX_RE = re.compile(r"^[0-9a-f]+$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def entropy_bits(s: str) -> float:
    """Shannon entropy per character."""
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values()) if n else 0.0


def looks_random(s: str, *, hex_ok: bool = False) -> bool:
    """A long word of mixed character classes with high entropy (a key, a password)."""
    if len(s) < 20 or _UUID_RE.match(s):
        return False
    if _HEX_RE.match(s):
        return not hex_ok
    classes = sum(
        (
            any(c.islower() for c in s),
            any(c.isupper() for c in s),
            any(c.isdigit() for c in s),
            any(not c.isalnum() and c not in "._-/:" for c in s),
        )
    )
    return classes >= 2 and entropy_bits(s) >= 3.5


def looks_secret(s: str, *, hex_ok: bool = False) -> bool:
    """True for provider key prefixes, JWTs, PEM keys, credential URLs, random tokens."""
    if _SECRET_RE.search(s):
        return True
    return any(looks_random(word, hex_ok=hex_ok) for word in s.split())


def has_control(s: str) -> bool:
    return bool(_CONTROL_RE.search(s))
