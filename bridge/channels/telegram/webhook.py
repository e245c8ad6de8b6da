"""Telegram's webhook mode: the secret Telegram sends, and taking one update.

`webhook_secret` is the configured `telegram.webhook_secret` (checked: 1-256
of A-Z a-z 0-9 _ -, as the Bot API requires), or a fresh random one when
none is configured. `take_update` answers one webhook request: 401 (and
nothing else) unless `SECRET_HEADER` matches in constant time, 400 (one
WARNING line, no traceback) for a body that is no update (`read_update`: not
UTF-8 JSON, not an object with an integer `update_id`, nested deeper than
`MAX_DEPTH`, or shaped unlike an update: `{"update_id": 7, "message": "hi"}`),
and otherwise commits the update to the durable inbox (`store`) BEFORE it
answers 200 - a 503 when it cannot be stored, so Telegram sends it again -
and hands it to the application (or, with instances sharing the bot, leaves
it to the holder of the chat's lease).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web
from telegram import Bot, Update

from bridge.core.config import ConfigError
from bridge.core.config_sections import TelegramSettings

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_SECRET_OK = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
# arrays/objects an update may nest (Telegram's nest about 10 deep: a message, the one
# it replies to, its entities, their user); deeper is refused before the library reads it
MAX_DEPTH = 64
log = logging.getLogger("bridge.channels.telegram.channel")
Store = Callable[[Iterable[dict[str, Any]]], Awaitable[object]]


def webhook_secret(settings: TelegramSettings) -> str:
    if not settings.webhook_url:
        raise ConfigError("telegram.webhook_url is required when telegram.mode is 'webhook'")
    if settings.webhook_secret is None:
        return secrets.token_urlsafe(32)
    secret = settings.webhook_secret.get_secret_value()
    if not _SECRET_OK.fullmatch(secret):
        raise ConfigError("telegram.webhook_secret: 1-256 of A-Z a-z 0-9 _ -")
    return secret


def secret_ok(request: web.Request, secret: str) -> bool:
    given = request.headers.get(SECRET_HEADER, "")
    # a header's non-UTF-8 bytes arrive as lone surrogates: encoded so they cannot fail,
    # they simply do not match (a wrong secret, not a crash)
    raw = given.encode("utf-8", "surrogatepass")
    return bool(given) and hmac.compare_digest(raw, secret.encode())


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """True when arrays/objects in `value` nest deeper than `limit` (no recursion)."""
    todo: list[tuple[object, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        inner = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        if inner and depth > limit:
            return True
        todo.extend((child, depth + 1) for child in inner)
    return False


def read_update(body: bytes, bot: Bot) -> tuple[dict[str, Any], Update] | None:
    """The body as (its JSON object, the library's `Update`); None when it is no update."""
    try:
        raw = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested past the parser
        return None
    update_id = raw.get("update_id") if isinstance(raw, dict) else None
    if not isinstance(update_id, int) or isinstance(update_id, bool) or too_deep(raw):
        return None
    try:
        return raw, Update.de_json(raw, bot)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None  # a field of the wrong shape ("message": "hi") or one missing


async def take_update(
    request: web.Request,
    secret: str,
    bot: Bot,
    store: Store | None,
    hand: Callable[[Update], Awaitable[None]] | None,
) -> web.Response:
    """One webhook request; `hand` gets the update once stored (None: instances sharing
    the bot, where `store` wakes the holder of the chat's lease instead)."""
    if not secret_ok(request, secret):
        return web.Response(status=401)
    read = read_update(await request.read(), bot)
    if read is None:  # Telegram only sends updates: a 500 here would be retried forever
        log.warning("telegram: a webhook body that is no update was refused (400)")
        return web.Response(status=400)
    raw, update = read
    if store is not None:
        try:  # committed before Telegram hears 200; a 503 makes it send the update again
            await store([raw])
        except Exception as exc:
            log.error("telegram: an update could not be stored (%s)", type(exc).__name__)
            return web.Response(status=503)
    if hand is not None:
        await hand(update)
    return web.Response(text="ok")
