"""The running service: channels, signals and a clean shutdown.

`serve()` builds a roost (`bridge.app.build.build`), does start-up maintenance,
probes the sandbox, starts the channels of the channel table (`CHANNELS`:
one row per platform - name, enabled(settings), factory; the web bridge,
and Telegram when a token is configured), then the scheduler (reminders,
jobs and the outbox, delivered through the channels whose row offers a
`deliver`; `bridge.app.schedule_loop`), waits for SIGTERM/SIGINT, stops the
scheduler, lets in-flight messages finish for a grace period, and stops
everything in reverse order; exit status 0. A new platform is one module,
one config section and one row. Before anything opens the home, serve takes
the home's instance lock (`bridge.app.instance`) and runs `PRAGMA
quick_check` on roost.db; either failing is one line and exit status 1.
Under systemd (`Type=notify`, `bridge.app.notify`) it sends READY=1 once the
channels are up, STATUS= lines, WATCHDOG=1 from the event loop and STOPPING=1.
SIGHUP, or a change of the config file, reloads the configuration without a
restart (`bridge.app.reload`); in-flight turns go on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import secrets
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from bridge.app.build import Roost, build
from bridge.app.home import prepare_home
from bridge.app.instance import InstanceBusy, hold
from bridge.app.notify import Notifier, watchdog_interval
from bridge.app.reload import Reloader, watch_config
from bridge.app.schedule_loop import ScheduleLoop
from bridge.core.budgets import budgets_of
from bridge.core.config import ConfigError, Settings, config_path, load_settings
from bridge.core.db import DatabaseDamaged
from bridge.core.db import check as check_db
from bridge.core.router import CoreLimits
from bridge.core.turn import TurnSettings
from bridge.schedule.runtime import ChannelDeliver, recent_messages, reply_to_outbox
from bridge.types.messages import Inbound

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


class Channel(Protocol):
    """What serve needs of a channel: start it, stop it."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Launched:
    """A channel made by its row, and what to print once it has started."""

    channel: Channel
    announce: Callable[[], str]
    port: Callable[[], int] | None = None  # the local port it listens on, if any
    deliver: ChannelDeliver | None = None  # takes outbox entries (proactive messages)


Factory = Callable[[Settings, Roost, Mapping[str, Launched]], Launched]


@dataclass(frozen=True, slots=True)
class ChannelRow:
    """One chat platform: its name, whether the settings turn it on, how to make it.

    The factory sees the channels made by the rows above it (by name), so a
    channel can mount itself on another (Telegram's webhook on the web app).
    """

    name: str
    enabled: Callable[[Settings], bool]
    factory: Factory


def web_channel(settings: Settings, roost: Roost, made: Mapping[str, Launched]) -> Launched:
    from bridge.channels.web import WebChannel

    token, created = web_token(settings)
    web = WebChannel(
        roost.core.handle,
        roost.command_list,
        token,
        settings.web.host,
        settings.web.port,
        allowed_hosts=web_hosts(settings),
        recent=lambda chat, after: recent_messages(
            roost.db, settings.local_tenant, "web", chat, after
        ),
        metrics=roost.metrics.render if settings.web.metrics else None,
    )
    stored = settings.home / "web-token"

    def announce() -> str:
        url = f"http://{settings.web.host}:{web.port}/"
        if created:
            where = f"roost: the access token is stored in {stored}"
            return f"roost: web chat at {url}#token={token}\n{where}"
        return f"roost: web chat at {url} (token in {stored})"

    return Launched(web, announce, lambda: web.port, web.deliver)


def telegram_channel(settings: Settings, roost: Roost, made: Mapping[str, Launched]) -> Launched:
    """The Telegram channel; telegram is imported only when it is configured."""
    webhook = settings.telegram.mode == "webhook"
    if webhook and "web" not in made:
        raise ConfigError("telegram.mode 'webhook' needs the web server (web.enabled = true)")
    from bridge.channels.telegram import TelegramChannel, TelegramOptions
    from bridge.channels.web import WebChannel

    telegram = TelegramChannel(
        settings.telegram,
        roost.core.answer,
        roost.command_list,
        TelegramOptions(bootstrap_attempts=settings.telegram.start_attempts),
        undelivered=undelivered_hook(roost),
    )
    if webhook:
        web = made["web"].channel
        assert isinstance(web, WebChannel)
        telegram.mount(web.app)

    def announce() -> str:
        return f"roost: telegram bot @{telegram.app.bot.username} ({settings.telegram.mode})"

    return Launched(telegram, announce, deliver=telegram.deliver)


def undelivered_hook(roost: Roost) -> Callable[[Inbound, str], Awaitable[bool]]:
    """A channel's failed final reply goes to the outbox (the scheduler retries it)."""
    schedule = roost.schedule
    return reply_to_outbox(
        schedule.outbox, roost.resolver.resolve, schedule.changed, lambda: int(time.time() * 1000)
    )


CHANNELS: tuple[ChannelRow, ...] = (
    ChannelRow("web", lambda s: s.web.enabled, web_channel),
    ChannelRow("telegram", lambda s: s.telegram.token is not None, telegram_channel),
)
"""Every chat platform, in start order (a new platform is one more row)."""


def make_channels(
    settings: Settings, roost: Roost, rows: Sequence[ChannelRow]
) -> dict[str, Launched]:
    """Make the channels of the enabled rows, in order (nothing starts yet)."""
    made: dict[str, Launched] = {}
    for row in rows:
        if row.enabled(settings):
            made[row.name] = row.factory(settings, roost, made)
    return made


async def start_channels(made: Mapping[str, Launched], started: list[Launched]) -> None:
    """Start each channel in order, appending it to `started` (stopped in reverse)."""
    for launched in made.values():
        started.append(launched)
        await launched.channel.start()
        print(launched.announce(), flush=True)


async def stop_channels(started: list[Launched]) -> None:
    for launched in reversed(started):
        await launched.channel.stop()


def status_line(roost: Roost, started: Sequence[Launched], made: Mapping[str, Launched]) -> str:
    """The systemd STATUS= line: channels, turns served, backend."""
    names = [name for name, launched in made.items() if launched in started]
    up = ", ".join(names) or "none"
    served = roost.core.turns_served
    return f"channels: {up}; turns served: {served}; backend: {roost.models.describe_default()}"


async def heartbeat(notifier: Notifier, status: Callable[[], str], every: float, dog: bool) -> None:
    """From the event loop: WATCHDOG=1 each tick (a wedged loop stops them), STATUS= on change."""
    last = status()  # what READY=1 carried
    while True:
        await asyncio.sleep(every)
        if dog:
            notifier.watchdog()
        now = status()
        if now != last:
            notifier.status(now)
            last = now


def tell_ready(notifier: Notifier, status: Callable[[], str]) -> asyncio.Task[None] | None:
    """READY=1 now; under systemd, the heartbeat task (watchdog pings, STATUS= updates)."""
    notifier.ready(status())
    if not notifier.enabled:
        return None
    every = watchdog_interval(os.environ, os.getpid())
    return asyncio.create_task(
        heartbeat(notifier, status, every or STATUS_EVERY_S, every is not None)
    )


async def drain(roost: Roost, grace: float) -> None:
    log.info("stopping: letting in-flight messages finish (up to %gs)", grace)
    cancelled = await roost.core.drain(grace)
    if cancelled:
        log.warning("stopping: cancelled %d unfinished messages", cancelled)


async def stop_tasks(tasks: Sequence[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


STATUS_EVERY_S = 15.0
"""How often STATUS= is refreshed when systemd asks for no watchdog."""


def reload_models(roost: Roost, new: Settings) -> None:
    """Named models and token budgets apply live (bridge.app.models)."""
    roost.models.reload(new)
    roost.meter.set_budgets(budgets_of(new))


def live_limits(roost: Roost) -> Callable[[Settings], None]:
    """What a reload changes in the running core: message, reply and step limits."""

    def apply(new: Settings) -> None:
        roost.core.set_limits(
            CoreLimits(new.limits.max_message_chars),
            TurnSettings(new.llm.max_steps, new.limits.max_reply_chars),
        )
        reload_models(roost, new)

    return apply


async def serve(
    settings: Settings,
    *,
    ready: Callable[[int], None] | None = None,
    channels: Sequence[ChannelRow] = CHANNELS,
    notifier: Notifier | None = None,
    load: Callable[[], Settings] = load_settings,
) -> int:
    """Run the daemon until SIGTERM/SIGINT; exit status 0 on a clean stop.

    Exit status 1 with one line on stderr when another daemon holds the home
    or roost.db is damaged. `notifier` defaults to the one `$NOTIFY_SOCKET` names;
    `load` reads the configuration again on a reload.
    """
    notifier = notifier or Notifier.from_env(os.environ)
    prepare_home(settings.home)
    try:
        lock = hold(settings.home)
    except InstanceBusy as exc:
        return refuse(notifier, str(exc))
    try:
        check_db(settings.home / "roost.db")
        return await run(settings, notifier, ready, channels, load)
    except DatabaseDamaged as exc:
        return refuse(notifier, str(exc))
    finally:
        lock.release()


def refuse(notifier: Notifier, message: str) -> int:
    notifier.status(f"failed: {message}")
    print(f"roost: {message}", file=sys.stderr, flush=True)
    return 1


async def run(
    settings: Settings,
    notifier: Notifier,
    ready: Callable[[int], None] | None,
    channels: Sequence[ChannelRow],
    load: Callable[[], Settings],
) -> int:
    """Build, start the channels and the scheduler, tell systemd, wait for a signal, stop."""
    roost = await build(settings)
    log.info("model backend: %s (%s)", roost.backend.describe(), roost.backend_reason)
    removed = roost.maintain()
    if removed:
        log.warning("removed %d temporary files left by an earlier crash", removed)
    await roost.runner.start()  # probes the sandbox; missing layers are logged loudly
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    reloader = Reloader(
        settings, load, roost.resolver, roost.pairing, notifier, apply=live_limits(roost)
    )
    loop.add_signal_handler(signal.SIGHUP, reloader.request)
    watcher = asyncio.create_task(watch_config(config_path(os.environ)[0], reloader, stop))
    started: list[Launched] = []
    scheduler = ScheduleLoop(roost)
    beat: asyncio.Task[None] | None = None
    reloading = [watcher]
    try:
        made = make_channels(settings, roost, channels)
        try:
            await start_channels(made, started)
        except Exception as exc:
            notifier.status(f"failed: {exc}")
            raise
        for name, launched in made.items():
            if launched.deliver is not None:
                scheduler.deliveries.add(name, launched.deliver)
        scheduler.start()
        print(f"roost: model {roost.backend.describe()}; home {settings.home}", flush=True)
        beat = tell_ready(notifier, functools.partial(status_line, roost, started, made))
        reloading.append(asyncio.create_task(reloader.run()))  # after READY=1: then RELOADING=1
        if ready is not None:
            ports = [launched.port() for launched in started if launched.port is not None]
            ready(ports[0] if ports else 0)
        await stop.wait()
        notifier.stopping("stopping: letting in-flight messages finish")
        await scheduler.stop()
        await drain(roost, settings.limits.shutdown_grace_s)
    finally:
        if beat is not None:
            beat.cancel()
        await stop_tasks(reloading)
        await scheduler.stop()
        await stop_channels(started)
        await roost.aclose()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.remove_signal_handler(sig)
    print("roost: stopped", file=sys.stderr, flush=True)
    return 0
