"""Logging to stderr with secrets redacted: the one redaction point.

A `Redactor` knows the configured secrets (bot token, API keys, web and
webhook tokens) and masks every spelling a line could carry them in: the
vault masker's own (`bridge.loadout.mask.spellings` and its `Matcher`: JSON,
URL, HTML-entity and `\\uXXXX` escapes, base64, hex, any letter case) and the
secret half of a bot token, plus secrets of known shapes it was not told
about (bot tokens in URLs, bearer tokens, `sk-` keys).
It runs on the *formatted* line, so the message, its arguments, the logger
name, tracebacks and stack traces all pass through it; the same object
cleans the CLI's exit messages and uncaught-exception tracebacks
(`sys.excepthook`). python-telegram-bot and httpx log URLs that embed the
bot token. Message text is never logged at INFO by roost itself.

With `log_format = "json"` (`ROOST_LOG_FORMAT=json`) each record is one
JSON object on one line (`ts`, `level`, `logger`, `msg`, and `exc` for a
traceback); each field passes the same Redactor before it is encoded, so the
line is always valid JSON and never holds a secret.

`LogFlood` (on the one handler) bounds what a flood can write: lines are
grouped by kind (logger, level, the message's first line with numbers and
addresses blanked, the exception's type); each kind may write `burst`
lines per `interval_s`, all kinds together `total` lines, and what is held
back is counted and said in one line per kind when its window ends ("... N
more like this in the last 10s"). A descriptor shortage that fails every
accept or every file open therefore writes a few lines a minute, not a
traceback per attempt. At `log_level = "DEBUG"` nothing is held back (a
debugging session asks for every line).

Libraries: `httpx`, `telegram` and `aiohttp.access` log from WARNING up (httpx
logs a line per request, with the bot token in its URL); `httpcore` (a line per
connection step of every Telegram long poll) from INFO up, also at `log_level =
"DEBUG"`, where it would be most of the log. `ROOST_LOG_DEBUG` (comma-separated
logger names, e.g. `httpcore,httpx,telegram`) asks for those at DEBUG explicitly.

`MalformedRequests` (on `aiohttp.server`) turns a request aiohttp could not
parse (an overlong header or URL, a broken header line) into one WARNING
naming its kind: aiohttp logs it as an ERROR with a traceback that quotes up
to 100 bytes of the request, which an internet scanner repeats all day.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TextIO
from urllib.parse import quote, quote_plus, unquote

from bridge.core.config import Settings
from bridge.loadout import mask as vault_mask
from bridge.storage import url as db_url

MASK = "[redacted]"
_SHAPES = (
    re.compile(r"(?i)(/bot)\d+:[A-Za-z0-9_-]+"),
    re.compile(r"\b\d{6,}:[A-Za-z0-9_-]{30,}\b"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}\b"),
)
_TAIL_MIN = 8  # the part after a bot token's ':' is masked alone from this length on


def spellings(secret: str) -> set[str]:
    """The forms in which `secret` can appear in a URL, an error or a log line (the
    Redactor also finds each in any letter case and through escapes: `Matcher`)."""
    out = {secret, quote(secret), quote(secret, safe=""), quote_plus(secret)}
    out |= vault_mask.spellings(secret)
    _, colon, tail = secret.partition(":")
    if colon and len(tail) >= _TAIL_MIN:
        out |= spellings(tail)
    return {s for s in out if s}


def secret_values(settings: Settings) -> list[str]:
    """The configured secrets a log line must never show."""
    values = [
        settings.telegram.token,
        settings.telegram.webhook_secret,
        settings.llm.api_key,
        settings.llm.transcribe.api_key,
        settings.llm.speech.api_key,
        settings.llm.embeddings.api_key,
        settings.web.token,
        settings.whatsapp.access_token,
        settings.whatsapp.app_secret,
        settings.whatsapp.verify_token,
    ]
    for rule in settings.tenants.values():  # a tenant's page token, MCP servers' secrets
        values.append(rule.web_token)
        for server in rule.mcp.values():
            values.extend((*server.env.values(), *server.headers.values()))
    found = [v.get_secret_value() for v in values if v is not None and v.get_secret_value()]
    url = settings.database.url  # its password (the URL is shown redacted: bridge.storage.url)
    password = None if url is None else db_url.password_of(url.get_secret_value())
    return found + ([unquote(password)] if password else [])


class Redactor:
    """Masks known secrets (every spelling) and secrets of known shapes."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._forms: set[str] = set().union(*(spellings(s) for s in secrets)) if secrets else set()
        # the vault masker's matcher: one alternation, any case, escapes decoded
        self._known = vault_mask.Matcher(dict.fromkeys(sorted(self._forms), MASK))

    def learn(self, secret: str) -> None:
        """Mask `secret` too from now on (a value read or made after logging was set up:
        the web page's token kept in the home)."""
        forms = spellings(secret) if secret else set()
        if not forms <= self._forms:
            self._forms |= forms
            self._known = vault_mask.Matcher(dict.fromkeys(sorted(self._forms), MASK))

    def redact(self, text: str) -> str:
        if self._known:
            text = self._known.sub(text)
        for pattern in _SHAPES:
            text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + MASK, text)
        return text

    def formatter(self, fmt: str) -> logging.Formatter:
        return _RedactingFormatter(fmt, self)

    def excepthook(
        self, kind: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        text = "".join(traceback.format_exception(kind, exc, tb))
        sys.stderr.write(self.redact(text))


def redact_also(secret: str) -> None:
    """Tell the Redactor this process logs through (`setup_logging`'s, on the root logger's
    handlers) about one more secret; nothing when logging was set up otherwise."""
    for handler in logging.getLogger().handlers:
        redactor = getattr(handler.formatter, "redactor", None)
        if isinstance(redactor, Redactor):
            redactor.learn(secret)


class _RedactingFormatter(logging.Formatter):
    def __init__(self, fmt: str, redactor: Redactor) -> None:
        super().__init__(fmt)
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        return self.redactor.redact(super().format(record))


class _JsonFormatter(logging.Formatter):
    """One JSON object per line; every field is cleaned by the Redactor before encoding."""

    converter = staticmethod(time.gmtime)  # `ts` is UTC

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, str] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        clean = {key: self.redactor.redact(value) for key, value in entry.items()}
        return json.dumps(clean, ensure_ascii=False)


class RedactingFilter(logging.Filter):
    """For handlers roost does not format itself: cleans message and traceback."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self._redactor = redactor or Redactor()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = self._redactor.redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None:
            formatted = logging.Formatter().formatException(record.exc_info)
            record.exc_text = self._redactor.redact(formatted)
        return True


_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")
FLOOD_INTERVAL_S = 10.0
FLOOD_BURST = 10  # lines of one kind per interval
FLOOD_TOTAL = 100  # lines of all kinds per interval
FLOOD_KINDS = 1000  # kinds remembered at once


def kind_of(record: logging.LogRecord) -> tuple[str, int, str, str]:
    """What makes two log lines "the same": logger, level, message shape, exception type."""
    first = str(record.msg).split("\n", 1)[0][:160]
    exc = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
    return record.name, record.levelno, _NUMBERS.sub("#", first), exc


class LogFlood(logging.Filter):
    """Rate limits log lines by kind; held-back lines are counted and reported."""

    def __init__(
        self,
        interval_s: float = FLOOD_INTERVAL_S,
        burst: int = FLOOD_BURST,
        total: int = FLOOD_TOTAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.interval_s, self.burst, self.total, self._clock = interval_s, burst, total, clock
        self._window = clock()
        self._all = 0
        self._seen: dict[tuple[str, int, str, str], list[int]] = {}  # kind -> [written, held]
        self.emit: Callable[[logging.LogRecord], object] | None = None  # the handler's

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "roost_flood_report", False):
            return True
        now = self._clock()
        if now - self._window >= self.interval_s:
            self._report(now)
        kind = kind_of(record)
        counts = self._seen.get(kind)
        if counts is None:
            if len(self._seen) >= FLOOD_KINDS:
                self._seen.pop(next(iter(self._seen)))
            counts = self._seen[kind] = [0, 0]
        if counts[0] >= self.burst or self._all >= self.total:
            counts[1] += 1
            return False
        counts[0] += 1
        self._all += 1
        return True

    def flush(self) -> None:
        """Report what is held back now (at shutdown)."""
        self._report(self._clock())

    def _report(self, now: float) -> None:
        held = [(kind, c[1]) for kind, c in self._seen.items() if c[1]]
        window, self._window = now - self._window, now
        self._seen = {}
        self._all = 0
        if not held or self.emit is None:
            return
        for (name, level, shape, exc), count in held[: self.burst]:
            text = f"... {count} more like this in the last {window:.0f}s: {shape}"
            self._say(name, level, text + (f" ({exc})" if exc else ""))
        if len(held) > self.burst:
            rest = sum(count for _, count in held[self.burst :])
            self._say("roost", logging.WARNING, f"... and {rest} more log lines held back")

    def _say(self, name: str, level: int, text: str) -> None:
        assert self.emit is not None
        record = logging.LogRecord(name, level, __file__, 0, text, None, None)
        record.roost_flood_report = True
        self.emit(record)


class MalformedRequests(logging.Filter):
    """On `aiohttp.server`: a request aiohttp could not parse (a header or URL over 8190
    bytes, an empty Host, a broken request line) is the client's fault, not roost's: one
    WARNING line naming the kind, not an ERROR with a traceback that quotes the request's
    bytes (up to 100 of them, a bearer token's part among them)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None or not _unparsable(exc):
            return True
        remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
        record.msg = "web: refused a malformed request from %s (%s)"
        record.args = (remote, type(exc).__name__)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info = record.exc_text = None
        return True


def _unparsable(exc: BaseException) -> bool:
    """aiohttp's own parse errors (`aiohttp.http_exceptions.HttpProcessingError`), told
    by name: this module never imports aiohttp (`roost send /help` does not load it)."""
    return any(
        c.__name__ == "HttpProcessingError" and c.__module__ == "aiohttp.http_exceptions"
        for c in type(exc).__mro__
    )


def _flush_at_exit(flood: LogFlood, handler: logging.StreamHandler[TextIO]) -> None:
    """Report what is held back, unless the stream is closed by now (a test runner's
    capture, a closed pipe: writing would only print a "Logging error" traceback)."""
    if not getattr(handler.stream, "closed", False):
        flood.flush()


QUIET = ("httpx", "telegram", "aiohttp.access")
"""Libraries logged from WARNING up."""
CHATTY = ("httpcore",)
"""Libraries logged from INFO up, even at DEBUG (a line per connection step)."""
DEBUG_ALSO = "ROOST_LOG_DEBUG"
"""Logger names (comma-separated) the operator wants at DEBUG, libraries included."""


def asked_for(environ: Mapping[str, str]) -> list[str]:
    """The logger names `ROOST_LOG_DEBUG` lists."""
    return [name.strip() for name in environ.get(DEBUG_ALSO, "").split(",") if name.strip()]


def setup_logging(
    level: str = "INFO",
    secrets: Iterable[str] = (),
    log_format: str = "text",
    environ: Mapping[str, str] | None = None,
) -> Redactor:
    """Route logging (and uncaught tracebacks) to stderr through one `Redactor`;
    `environ` (default: this process's) may ask for libraries at DEBUG (`DEBUG_ALSO`)."""
    redactor = Redactor(secrets)
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(_JsonFormatter(redactor))
    else:
        handler.setFormatter(redactor.formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if level != "DEBUG":  # DEBUG is for a debugging session: everything, unlimited
        flood = LogFlood()
        flood.emit = handler.handle
        handler.addFilter(flood)
        atexit.register(_flush_at_exit, flood, handler)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in QUIET:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    for chatty in CHATTY:
        logging.getLogger(chatty).setLevel(max(logging.INFO, root.level))
    for name in asked_for(os.environ if environ is None else environ):
        logging.getLogger(name).setLevel(logging.DEBUG)
    server = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, MalformedRequests) for f in server.filters):
        server.addFilter(MalformedRequests())
    sys.excepthook = redactor.excepthook
    return redactor
