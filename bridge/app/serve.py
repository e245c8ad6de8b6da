"""The running service: channels, signals and a clean shutdown.

`serve()` builds a roost (`bridge.app.build.build`), does start-up maintenance,
starts the channels of the channel table (`CHANNELS`:
one row per platform - name, enabled(settings), factory; the web bridge,
and Telegram when a token is configured), then the scheduler (reminders,
jobs and the outbox, delivered through the channels whose row offers a
`deliver`; `bridge.app.schedule_loop`), says it is ready, starts the spare
sandbox helper (`start_sandbox`; not with `[forge] spare_helper = false`) and
builds the screens' tables on its loop (`prepare_screens`), waits for
SIGTERM/SIGINT, stops the scheduler, lets in-flight messages finish for a grace period, and stops
everything in reverse order; exit status 0. A new platform is one module,
one config section and one row. Before anything opens the home, serve takes
the home's instance lock (`bridge.app.instance`; shared when `[database] url`
is PostgreSQL: several instances serve one home) and runs `PRAGMA
quick_check` on roost.db; either failing is one line and exit status 1, as
is a `[cluster] instance` name a live instance holds on PostgreSQL
(`bridge.app.database.claim_cluster`; PostgreSQL unreachable is 78). There
the scheduler runs only on the holder of the lease `schedule` (`schedule_lead`).
Under systemd (`Type=notify`, `bridge.app.notify`) it sends READY=1 once the
channels are up, STATUS= lines, WATCHDOG=1 from the event loop and STOPPING=1.
SIGHUP, or a change of the config file, reloads the configuration without a
restart (`bridge.app.reload`); in-flight turns go on. Before anything opens,
the soft descriptor limit is raised to the hard one (`bridge.app.descriptors`);
the web row then takes its share of it and leaves the reserve to the rest.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from bridge.app.build import Roost, build
from bridge.app.channel_config import half_configured, record_served
from bridge.app.channels_up import (
    CHANNELS,
    ChannelRow,
    Launched,
    make_channels,
    start_channels,
    stop_channels,
    undelivered_hook,
    web_channel,
    web_hosts,
)
from bridge.app.database import claim_cluster
from bridge.app.descriptors import raise_soft_limit
from bridge.app.home import prepare_home
from bridge.app.instance import InstanceBusy, hold
from bridge.app.live import reload_hooks
from bridge.app.notify import Notifier, watchdog_interval
from bridge.app.platforms import platforms_of
from bridge.app.reload import Reloader, fingerprint, watch_config
from bridge.app.schedule_loop import ScheduleLoop
from bridge.core.config import Settings, config_path, load_settings
from bridge.core.db import DatabaseDamaged
from bridge.core.db import check as check_db
from bridge.core.identities import identity_map
from bridge.core.words import count
from bridge.screening.prepare import prepare_screens
from bridge.storage.errors import LeaseHeld
from bridge.storage.leases import InstanceName, Leases, Singleton
from bridge.types.platform import Platforms

if TYPE_CHECKING:
    from forge.runner import SandboxRunner

log = logging.getLogger("roost")

__all__ = [  # the channel table lives in bridge.app.channels_up; these names stay importable
    "CHANNELS",
    "ChannelRow",
    "Launched",
    "make_channels",
    "serve",
    "start_channels",
    "stop_channels",
    "undelivered_hook",
    "web_channel",
    "web_hosts",
]


def status_line(roost: Roost, started: Sequence[Launched], made: Mapping[str, Launched]) -> str:
    """The systemd STATUS= line: channels, turns served, backend."""
    names = [name for name, launched in made.items() if launched in started]
    up = ", ".join(names) or "none"
    health = "".join(f"; {line()}" for line in roost.channel_lines.values())  # e.g. reconnecting
    served = roost.core.turns_served
    return (
        f"channels: {up}{health}; turns served: {served}; "
        f"backend: {roost.models.describe_default()}"
    )


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
        log.warning("stopping: cancelled %s", count(cancelled, "unfinished message"))


async def stop_tasks(tasks: Sequence[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def checked(load: Callable[[], Settings], platforms: Platforms) -> Settings:
    """`load()`, refused (ConfigError) when a `<platform>_ids` list cannot be used."""
    settings = load()
    identity_map(settings.tenants, platforms)
    return settings


STATUS_EVERY_S = 15.0
"""How often STATUS= is refreshed when systemd asks for no watchdog."""


async def start_sandbox(runner: SandboxRunner) -> None:
    """The spare sandbox helper, started once the daemon is ready: it probes the machine
    (missing layers are logged loudly) and a new tenant's first tool call takes it, or
    waits for it while it still starts. Its start-up (about 0.1 s of CPU in a process of
    its own) is not on the way to the ready line. A helper that fails to start is
    logged; each tool call then tries to start one of its own (and fails if it cannot)."""
    try:
        await runner.start()
    except Exception as exc:
        log.error("the sandbox helper failed to start (%s): personal tools cannot run", exc)


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
    raise_soft_limit()
    prepare_home(settings.home)
    try:
        lock = hold(settings.home, shared=settings.database.url is not None)
    except InstanceBusy as exc:
        return refuse(notifier, str(exc))
    try:
        check_db(settings.home / "roost.db")
        return await run(settings, notifier, ready, channels, load)
    except DatabaseDamaged as exc:
        return refuse(notifier, str(exc))
    finally:
        lock.release()


async def stop_when(event: asyncio.Event, stop: asyncio.Event) -> None:
    await event.wait()
    log.error("stopping: this instance's [cluster] instance name is held by another instance")
    stop.set()


def schedule_lead(roost: Roost, instance: InstanceName | None) -> Singleton | None:
    """On PostgreSQL (instances may share the database) the scheduler runs only on the
    holder of the lease `schedule`; None on SQLite (one process)."""
    if instance is None:
        return None
    return Singleton(Leases(roost.database), "schedule", instance.token, instance.ttl_ms)


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
    platforms = platforms_of(channels)
    roost = await build(settings, platforms=platforms)
    try:
        instance = await claim_cluster(roost.database, settings.cluster)
    except LeaseHeld as exc:
        await roost.aclose()
        return refuse(notifier, str(exc))
    log.info("model backend: %s (%s)", roost.backend.describe(), roost.backend_reason)
    removed = roost.maintain()
    if removed:
        log.warning("removed %d temporary files left by an earlier crash", removed)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    path = config_path(os.environ)[0]
    reloader = Reloader(
        settings,
        functools.partial(checked, load, platforms),
        notifier,
        fingerprint=lambda: fingerprint(path, os.environ),
        hooks=reload_hooks(roost),
        path=path,
    )
    loop.add_signal_handler(signal.SIGHUP, reloader.request)
    watcher = asyncio.create_task(watch_config(path, reloader, stop))
    # its first step puts the watch in place (synchronously, before its first wait): a
    # change made once the daemon says it is ready is seen
    await asyncio.sleep(0)
    started: list[Launched] = []
    scheduler = ScheduleLoop(roost, lead=schedule_lead(roost, instance))
    beat: asyncio.Task[None] | None = None
    background = [watcher]
    if instance is not None:  # the name taken by another while this one was away: stop
        background.append(asyncio.create_task(stop_when(instance.lost, stop)))
    try:
        made = make_channels(settings, roost, channels)
        try:
            await start_channels(made, started)
        except Exception as exc:
            notifier.status(f"failed: {exc}")
            raise
        try:
            record_served(settings.home, made)  # `roost send --to` trusts what is served
        except OSError as exc:
            log.warning("cannot record the started channels in %s: %s", settings.home, exc)
        for name, launched in made.items():
            if launched.deliver is not None:
                scheduler.deliveries.add(name, launched.deliver)
            reloader.hooks += launched.live
        scheduler.start()
        for channel, missing in half_configured(settings):  # partly written: not in silence
            print(f"roost: {channel} is off: {missing}", flush=True)
        print(f"roost: model {roost.backend.describe()}; home {settings.home}", flush=True)
        beat = tell_ready(notifier, functools.partial(status_line, roost, started, made))
        background.append(asyncio.create_task(reloader.run()))  # after READY=1: then RELOADING=1
        if ready is not None:
            ports = [launched.port() for launched in started if launched.port is not None]
            ready(ports[0] if ports else 0)
        if settings.forge.spare_helper:  # else the first tool call starts its helper
            background.append(asyncio.create_task(start_sandbox(roost.runner)))
        background.append(asyncio.create_task(prepare_screens()))  # beside the helper's start
        await stop.wait()
        notifier.stopping("stopping: letting in-flight messages finish")
        await scheduler.stop()
        await drain(roost, settings.limits.shutdown_grace_s)
    finally:
        if beat is not None:
            beat.cancel()
        await stop_tasks(background)
        await scheduler.stop()
        await stop_channels(started)
        if instance is not None:
            await instance.release()  # a restart takes the name at once
        await roost.aclose()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.remove_signal_handler(sig)
    print("roost: stopped", file=sys.stderr, flush=True)
    return 0
