"""Telegram's webhook mode: the secret Telegram sends, and taking one update.

`webhook_secret` is the configured `telegram.webhook_secret` (checked: 1-256
of A-Z a-z 0-9 _ -, as the Bot API requires), or a fresh random one when
none is configured. `take_update` answers one webhook request: 401 (and
nothing else) unless `SECRET_HEADER` matches in constant time, 400 for a
body that is no update, and otherwise commits the update to the durable
inbox (`store`) BEFORE it answers 200 - a 503 when it cannot be stored, so
Telegram sends it again - and hands it to the application (or, with
instances sharing the bot, leaves it to the holder of the chat's lease).
"""

from __future__ import annotations

import hmac
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
    return bool(given) and hmac.compare_digest(given.encode(), secret.encode())


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
    try:
        raw = await request.json()
        update = Update.de_json(raw, bot)
    except (ValueError, TypeError, KeyError):
        return web.Response(status=400)
    if store is not None:
        try:  # committed before Telegram hears 200; a 503 makes it send the update again
            await store([raw])
        except Exception as exc:
            log.error("telegram: an update could not be stored (%s)", type(exc).__name__)
            return web.Response(status=503)
    if hand is not None:
        await hand(update)
    return web.Response(text="ok")
