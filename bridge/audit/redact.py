"""Metadata-only enforcement: what may enter an audit record's details.

`redact(details)` returns a new dict holding only names, ids, counts,
hashes, durations and outcomes. Dropped keys are listed (by name, never by
value) in `details["_dropped"]`. The rules are documented in docs/audit.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from bridge.audit.shapes import has_control, looks_secret

# A key is forbidden when one of its words is here (case-insensitive; words
# are split at "_", "-", ".", digits and camelCase humps).
FORBIDDEN_WORDS = frozenset(
    [
        "text",
        "texts",
        "content",
        "contents",
        "body",
        "bodies",
        "prompt",
        "prompts",
        "message",
        "messages",
        "msg",
        "source",
        "src",
        "code",
        "script",
        "password",
        "passwords",
        "passwd",
        "passphrase",
        "pwd",
        "pin",
        "otp",
        "token",
        "tokens",
        "secret",
        "secrets",
        "value",
        "values",
        "arguments",
        "argument",
        "args",
        "params",
        "parameters",
        "input",
        "inputs",
        "output",
        "outputs",
        "stdout",
        "stderr",
        "reply",
        "replies",
        "answer",
        "response",
        "request",
        "query",
        "question",
        "note",
        "notes",
        "bullet",
        "bullets",
        "description",
        "payload",
        "data",
        "credential",
        "credentials",
        "key",
        "keys",
        "apikey",
        "auth",
        "authorization",
        "cookie",
        "cookies",
        "signature",
        "private",
        "snippet",
        "diff",
        "patch",
        "traceback",
        "exception",
        "error",
        "errors",
        "reason",
        "summary",
        "comment",
        "comments",
        "instruction",
        "instructions",
        "excerpt",
        "quote",
        "raw",
        "html",
        "markdown",
        "transcript",
        "memory",
        "bio",
        "profile",
        "vault",
        "accesstoken",
        "authtoken",
        "privatekey",
        "clientsecret",
        "sessiontoken",
    ]
)
# Substrings forbidden anywhere in a key, whatever the word split found.
FORBIDDEN_STEMS = ("password", "passwd", "secret", "token", "apikey", "privatekey", "credential")
# ...unless the key's last word says it is a measure or a reference.
MEASURE_WORDS = frozenset({"count", "len", "length", "chars", "bytes", "size", "ms", "n", "seq"})
HASH_WORDS = frozenset({"hash", "sha256", "digest", "prefix"})
REF_WORDS = frozenset({"id", "ids", "kind", "type", "name", "names", "status"})

MAX_STRING = 200
MAX_WORDS = 6
MAX_ITEMS = 64
MAX_INT = 2**53
KEY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
_WORD_RE = re.compile(r"[A-Z]?[a-z]+\d*|[A-Z]+\d*(?![a-z])|\d+")
_SLUG_RE = re.compile(r"^[\w.:@/+#=-]{1,128}$")
_HEX_RE = re.compile(r"^[0-9a-f]{4,128}$")
INVALID_KEY = "<invalid-key>"
_MEASURE_OR_HASH = MEASURE_WORDS | HASH_WORDS
_KEPT_ANYWAY = MEASURE_WORDS | HASH_WORDS | REF_WORDS
_Rule = tuple[str, bool, bool]  # last word, rescued, forbidden
# Memos of pure decisions (cleared when full). `_RULES` holds only names that
# matched `KEY_RE`. `_KEPT` holds string values found fit to record, with the
# (last word, rescued) of their key, so a repeated value ("web", a chat id,
# the message id in several events of one turn) is not checked again; a
# dropped value is never remembered.
_RULES: dict[str, _Rule] = {}
_KEPT: dict[tuple[str, str, bool], None] = {}
_MEMO_MAX = 4096

Scalar = str | int | bool | None


class _Drop(Exception):
    """Internal: the value may not be recorded."""


def key_words(key: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(key)]


def _forbidden(key: str, words: list[str]) -> bool:
    lowered = key.lower()
    if any(s in lowered for s in FORBIDDEN_STEMS):
        return True
    return any(w in FORBIDDEN_WORDS or w.rstrip("0123456789") in FORBIDDEN_WORDS for w in words)


def _scalar(value: object, key: str, last: str, rescued: bool) -> Scalar:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        if last == "ms" and math.isfinite(value) and abs(value) < MAX_INT:
            return round(value)
        raise _Drop
    if isinstance(value, int):
        if abs(value) >= MAX_INT:
            raise _Drop
        return value
    if not isinstance(value, str):
        raise _Drop
    if type(value) is str and (value, last, rescued) in _KEPT:
        return value
    _check_string(value, last, rescued)
    if type(value) is str:
        if len(_KEPT) >= _MEMO_MAX:
            _KEPT.clear()
        _KEPT[value, last, rescued] = None
    return value


def _check_string(value: str, last: str, rescued: bool) -> None:
    if rescued or last in _MEASURE_OR_HASH:
        # A forbidden word kept only because the key names a measure or a
        # reference: the value must be a number, a hex digest or a slug.
        if last in MEASURE_WORDS:
            raise _Drop
        if last in HASH_WORDS:
            if _HEX_RE.match(value):
                return
            raise _Drop
        if not _SLUG_RE.fullmatch(value):
            raise _Drop
    if len(value) > MAX_STRING or has_control(value) or len(value.split()) > MAX_WORDS:
        raise _Drop
    if looks_secret(value, hex_ok=last in HASH_WORDS or last in ("id", "ids")):
        raise _Drop


def _key_rule(key: str) -> _Rule:
    """(last word, rescued, forbidden) of a key that matched `KEY_RE`.

    A pure function of the name, remembered per name: keys repeat in every
    turn ("channel", "chat", "msg_id") and a valid name has at most 64 characters.
    """
    rule = _RULES.get(key)
    if rule is None:
        words = key_words(key)
        last = words[-1] if words else ""
        if not _forbidden(key, words):
            rule = (last, False, False)
        elif last in _KEPT_ANYWAY:
            rule = (last, True, False)
        else:
            rule = (last, False, True)
        if len(_RULES) >= _MEMO_MAX:
            _RULES.clear()
        _RULES[key] = rule
    return rule


def _value(value: object, rule: _Rule, key: str, nested: bool) -> object:
    last, rescued, forbidden = rule
    if forbidden:
        raise _Drop
    kind = type(value)
    if kind is str or kind is int:  # the common cases, decided by `_scalar`
        return _scalar(value, key, last, rescued)
    if isinstance(value, list | tuple):
        if len(value) > MAX_ITEMS:
            raise _Drop
        return [_scalar(v, key, last, rescued) for v in value]
    if isinstance(value, Mapping):
        if nested or rescued:
            raise _Drop
        return value  # handled by the caller (one level of nesting only)
    return _scalar(value, key, last, rescued)


def _redact_map(
    details: Mapping[object, object], prefix: str, dropped: list[str]
) -> dict[str, object]:
    out: dict[str, object] = {}
    nested = bool(prefix)
    for i, (key, value) in enumerate(details.items()):
        if not isinstance(key, str) or (key not in _RULES and not KEY_RE.fullmatch(key)):
            dropped.append(prefix + INVALID_KEY)
            continue
        if i >= MAX_ITEMS:
            dropped.append(prefix + key)
            continue
        try:
            kept = _value(value, _key_rule(key), key, nested)
        except _Drop:
            dropped.append(prefix + key)
            continue
        kind = type(kept)
        if kind is not str and kind is not int and isinstance(kept, Mapping):
            kept = _redact_map(kept, prefix + key + ".", dropped)
        out[key] = kept
    return out


def redact(details: Mapping[object, object]) -> dict[str, object]:
    """Keep metadata only; list dropped key paths under `_dropped`."""
    dropped: list[str] = []
    out = _redact_map(details, "", dropped)
    if dropped:
        out["_dropped"] = sorted(set(dropped))
    return out
