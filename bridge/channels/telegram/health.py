"""The Telegram channel's connection state: what the log and `/status` say.

The channel is `starting`, `up`, `reconnecting` or `stopped`. `failing(why,
retry_in)` logs one warning when the channel starts failing or the reason
changes, never once per attempt (the attempts are logged at debug);
`up(detail)` logs one line when the connection opens or comes back.
`line()` is the channel's `/status` line, e.g. "telegram: reconnecting,
last error: cannot reach the Bot API (…), next try in 12s". `why(exc)`
turns a python-telegram-bot error into a sentence that says what to do,
with the bot token masked (the line reaches chat users through /status).
`Backoff` is capped exponential backoff with jitter (pure; the random
source is injected). The clock is injected too.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

from telegram.error import Conflict, Forbidden, InvalidToken, NetworkError, TelegramError

from bridge.core.words import count

log = logging.getLogger("bridge.channels.telegram.channel")
MAX_WHY = 300


class TokenRefused(NetworkError):
    """getUpdates answered 401: the token was revoked (retried, never fatal)."""


class InboxUnavailable(NetworkError):
    """Updates arrived but could not be stored: they are fetched again later. A network
    kind of error, so the library keeps polling; its message says why (a full disk)."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before retry number `attempt` (1, 2, ...): doubling from `first_s`,
    capped at `max_s`, each drawn between half and all of its step."""

    first_s: float = 1.0
    max_s: float = 300.0

    def delay(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        step = min(self.max_s, self.first_s * 2.0 ** min(max(attempt - 1, 0), 40))
        return step * (0.5 + rng() / 2)


def why(exc: BaseException, token: str) -> str:
    """What went wrong, and what to do about it, in one line without the token."""
    if isinstance(exc, InvalidToken | TokenRefused):
        text = (
            "Telegram refused the bot token (401 Unauthorized): it is wrong or was revoked; "
            "set a valid ROOST_TELEGRAM__TOKEN (a new one comes from @BotFather)"
        )
    elif isinstance(exc, Conflict):
        text = (
            "another program is reading this bot's updates (409 Conflict): stop the other "
            "instance, or remove its webhook"
        )
    elif isinstance(exc, InboxUnavailable):
        text = (
            f"{exc.message}; Telegram keeps them and they are fetched again once they can be stored"
        )
    elif isinstance(exc, Forbidden):
        text = f"Telegram forbids this ({exc})"
    elif isinstance(exc, NetworkError):
        text = (
            f"the Bot API is unreachable or failing ({exc}); check the network and "
            "ROOST_TELEGRAM__API_BASE_URL"
        )
    elif isinstance(exc, TelegramError):
        text = f"the Bot API answered: {exc}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return _mask(text, token)[:MAX_WHY]


def _mask(text: str, token: str) -> str:
    """The token in any spelling a URL error carries; its secret half when long
    enough to be told from ordinary words."""
    _, _, secret = token.partition(":")
    forms = {token, quote(token), quote(token, safe=""), quote_plus(token)}
    if len(secret) >= 8:
        forms |= {secret, quote(secret, safe="")}
    for form in sorted(forms - {""}, key=len, reverse=True):
        text = text.replace(form, "[token]")
    return text


def _seconds(value: float) -> str:
    value = max(0, round(value))
    return f"{value // 60}min {value % 60}s" if value >= 60 else f"{value}s"


class Health:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.state = "starting"
        self.detail = ""  # "@bot, polling" once up
        self.error = ""  # the last reason it failed
        self.failures = 0  # in a row
        self._retry_at: float | None = None
        self._kind = ""
        self.settled = asyncio.Event()  # the first attempt ended: up or said why not

    def up(self, detail: str) -> None:
        if self.state == "up" and detail == self.detail:
            return
        if self.failures:
            tries = count(self.failures, "failed try", "failed tries")
            log.info("telegram: connected again (%s) after %s", detail, tries)
        else:
            log.info("telegram: connected (%s)", detail)
        self.state, self.detail, self.failures, self._retry_at = "up", detail, 0, None
        self.settled.set()

    def failing(self, reason: str, retry_in: float | None, kind: str | None = None) -> None:
        """An attempt failed (or the open connection broke); `retry_in`: when the
        next try is due, None when the library retries on its own. A new `kind`
        of failure (default: the reason's words) is logged; the same one is not."""
        self.failures += 1
        self._retry_at = None if retry_in is None else self._clock() + retry_in
        when = "shortly" if retry_in is None else f"in {_seconds(retry_in)}"
        key = kind or reason
        if self.state != "reconnecting" or key != self._kind:
            log.warning("telegram: %s; retrying in the background (next try %s)", reason, when)
        else:
            log.debug("telegram: try %d failed (%s); next try %s", self.failures, reason, when)
        self.state, self.error, self._kind = "reconnecting", reason, key
        self.settled.set()

    def stopped(self) -> None:
        self.state = "stopped"

    def line(self) -> str:
        if self.state == "up":
            return f"telegram: up ({self.detail})"
        if self.state != "reconnecting":
            return f"telegram: {self.state}"
        if self._retry_at is None:
            when = "retrying"
        else:
            when = f"next try in {_seconds(self._retry_at - self._clock())}"
        return f"telegram: reconnecting, last error: {self.error}; {when}"
