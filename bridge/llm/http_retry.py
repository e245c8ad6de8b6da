"""HTTP helpers for model backends: retryable failures, Retry-After, safe hosts.

`retry_after_seconds` accepts only what RFC 9110 allows: finite non-negative
delta-seconds (a fraction is tolerated) or an HTTP date; `nan`, `inf`, a
negative number or anything else is ignored (the caller's own backoff
applies). `redirect_target` names where a 3xx pointed (host and port only):
model requests never follow redirects, since a redirect would re-send the
whole request (system prompt, history, key) to another server.

Nothing here knows the OpenAI protocol; another HTTP backend (anthropic, say)
can reuse it.
"""

from __future__ import annotations

import math
import re
import time
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

if TYPE_CHECKING:  # aiohttp is imported when a request is made
    import aiohttp


class Retry(Exception):
    """A failure worth another attempt (429, 5xx, connection trouble)."""

    def __init__(
        self, kind: str, detail: str, retry_after: float | None = None, said: str = ""
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.retry_after = retry_after
        self.said = said  # the server's own message (redacted): for the log, never the person


def retry_reason(kind: str, detail: str) -> str:
    """Why a retry happens, for the person: the kind in words, an HTTP status at most
    (never the server's own message, which may echo anything)."""
    status = detail.startswith("HTTP ") and len(detail) <= 8
    if kind in ("rate_limited", "overloaded"):
        words = "the model server is busy"
    elif status:  # it answered, with an error (as the final line says if no retry helps)
        words = "the model server answered with an error"
    else:
        words = "the model server did not answer"
    return f"{words} ({detail})" if status else words


CANNOT_CONNECT = "cannot connect"


def connection_detail(exc: aiohttp.ClientError) -> str:
    import aiohttp

    if isinstance(exc, aiohttp.ClientConnectorError):
        return CANNOT_CONNECT
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "the reply was cut off"
    return type(exc).__name__


def safe_host(base_url: str) -> str:
    """`host[:port]` of a URL: no scheme, credentials, path or query."""
    parts = urlsplit(base_url)
    host = parts.hostname or base_url
    if ":" in host:
        host = f"[{host}]"  # an IPv6 literal, as in a URL
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port else host


_DELTA_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Parse `Retry-After`: delta seconds or an HTTP date; None if absent or bad.

    Only digits (with an optional fraction) count as seconds: `nan`, `inf`,
    `-4` or `1e9` are bad values, so the caller backs off as if none was sent.
    """
    if not value:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        seconds = float(value)
        return seconds if math.isfinite(seconds) else None
    import email.utils  # here: the email package is a dozen modules every start skipped

    try:
        when = email.utils.parsedate_to_datetime(value)
        stamp = when.timestamp()
    except (TypeError, ValueError, OverflowError, OSError):
        return None
    if not math.isfinite(stamp):
        return None
    return max(0.0, stamp - (time.time() if now is None else now))


def redirect_target(request_url: str, location: str | None) -> str:
    """`host[:port]` a 3xx pointed to (its path and query are never shown)."""
    if not location:
        return "nowhere (no Location header)"
    try:
        return safe_host(urljoin(request_url, location.strip()))
    except ValueError:
        return "an unreadable Location"
