"""The running service: channels, signals and a clean shutdown.

`serve()` builds a roost (`bridge.app.build.build`), does start-up maintenance,
probes the sandbox, starts the web bridge (and Telegram when a token is
configured), waits for SIGTERM/SIGINT, lets in-flight messages finish for a
grace period, and stops everything in reverse order; exit status 0.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from bridge.app.build import Roost, build
from bridge.app.home import prepare_home
from bridge.core.config import ConfigError, Settings

log = logging.getLogger("roost")


def web_token(settings: Settings) -> tuple[str, bool]:
    """The web bearer token: configured, stored, or generated now (mode 0600)."""
    if settings.web.token is not None:
        return settings.web.token.get_secret_value(), False
    path = settings.home / "web-token"
    if path.is_file():
        return path.read_text().strip(), False
    token = secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return token, True


def web_hosts(settings: Settings) -> list[str]:
    """Extra Host names the web server answers: configured ones and the webhook's."""
    hosts = list(settings.web.allowed_hosts)
    if settings.telegram.token is not None and settings.telegram.mode == "webhook":
        netloc = urlsplit(settings.telegram.webhook_url or "").netloc.rpartition("@")[2]
        if netloc:
            hosts.append(netloc.lower())
    return hosts


def telegram_channel(settings: Settings, roost: Roost) -> Any:
    """The Telegram channel when a token is configured; telegram is imported only then."""
    if settings.telegram.token is None:
        return None
    if settings.telegram.mode == "webhook" and not settings.web.enabled:
        raise ConfigError("telegram.mode 'webhook' needs the web server (web.enabled = true)")
    from bridge.channels.telegram import TelegramChannel, TelegramOptions

    assert roost.resolver is not None and roost.pairing is not None
    return TelegramChannel(
        settings.telegram,
        roost.core.handle,
        roost.resolver.resolve,
        roost.pairing,
        roost.command_list,
        roost.audit,
        TelegramOptions(bootstrap_attempts=settings.telegram.start_attempts),
    )


async def serve(settings: Settings, *, ready: Callable[[int], None] | None = None) -> int:
    """Run the daemon until SIGTERM/SIGINT; exit status 0 on a clean stop."""
    from bridge.channels.web import WebChannel

    prepare_home(settings.home)
    roost = await build(settings)
    log.info("model backend: %s (%s)", roost.backend.describe(), roost.backend_reason)
    removed = roost.maintain()
    if removed:
        log.warning("removed %d temporary files left by an earlier crash", removed)
    if roost.runner is not None:
        await roost.runner.start()  # probes the sandbox; missing layers are logged loudly
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    channels = []
    telegram = telegram_channel(settings, roost)
    try:
        if settings.web.enabled:
            token, created = web_token(settings)
            web = WebChannel(
                roost.core.handle,
                roost.command_list,
                token,
                settings.web.host,
                settings.web.port,
                allowed_hosts=web_hosts(settings),
            )
            if telegram is not None and settings.telegram.mode == "webhook":
                telegram.mount(web.app)
            await web.start()
            channels.append(web)
            url = f"http://{settings.web.host}:{web.port}/"
            if created:
                print(f"roost: web chat at {url}#token={token}", flush=True)
                print(f"roost: the access token is stored in {settings.home / 'web-token'}")
            else:
                print(f"roost: web chat at {url} (token in {settings.home / 'web-token'})")
        if telegram is not None:
            channels.append(telegram)
            await telegram.start()
            print(f"roost: telegram bot @{telegram.app.bot.username} ({settings.telegram.mode})")
        print(f"roost: model {roost.backend.describe()}; home {settings.home}", flush=True)
        if ready is not None:
            ready(channels[0].port if channels else 0)
        await stop.wait()
        grace = settings.limits.shutdown_grace_s
        log.info("stopping: letting in-flight messages finish (up to %gs)", grace)
        cancelled = await roost.core.drain(grace)
        if cancelled:
            log.warning("stopping: cancelled %d unfinished messages", cancelled)
    finally:
        for channel in reversed(channels):
            await channel.stop()
        await roost.aclose()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    print("roost: stopped", file=sys.stderr, flush=True)
    return 0
