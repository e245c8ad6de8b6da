"""Meta's webhook checks (pure): the GET verification and `X-Hub-Signature-256`.

Meta signs every webhook POST with the app secret: the header is
`sha256=<hex of HMAC-SHA256(app_secret, the raw request body)>` (Meta's
"Webhooks: Event Notifications" docs; the body is hashed as sent, escaped
Unicode and all, so it is checked before it is parsed). `check` compares in
constant time and says which answer a failure gets: `missing` (no or
malformed header: 401) or `wrong` (403). The subscription check
(`GET ...?hub.mode=subscribe&hub.verify_token=T&hub.challenge=C`) answers
the challenge only when the mode is `subscribe` and the token matches
(constant time too).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from typing import Literal

HEADER = "X-Hub-Signature-256"
_FORM = re.compile(r"sha256=([0-9a-fA-F]{64})")
MAX_CHALLENGE = 256

Verdict = Literal["ok", "missing", "wrong"]


def signature(app_secret: bytes, body: bytes) -> str:
    """The header value Meta sends for `body`."""
    return "sha256=" + hmac.new(app_secret, body, hashlib.sha256).hexdigest()


def check(app_secret: bytes, body: bytes, header: str | None) -> Verdict:
    """Whether `header` signs `body` with `app_secret` (constant-time compare)."""
    match = _FORM.fullmatch((header or "").strip())
    if match is None or not app_secret:
        return "missing"
    given = bytes.fromhex(match.group(1))
    wanted = hmac.new(app_secret, body, hashlib.sha256).digest()
    return "ok" if hmac.compare_digest(given, wanted) else "wrong"


def challenge(query: Mapping[str, str], verify_token: bytes) -> str | None:
    """The `hub.challenge` to echo for a valid subscription request, else None."""
    given = query.get("hub.verify_token", "").encode()
    answer = query.get("hub.challenge", "")
    if query.get("hub.mode") != "subscribe" or not verify_token or not answer:
        return None
    if len(answer) > MAX_CHALLENGE or not answer.isprintable():
        return None
    return answer if hmac.compare_digest(given, verify_token) else None
