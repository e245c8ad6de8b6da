"""Reload without restart: SIGHUP or a change of the config file re-reads the configuration.

`Reloader.reload()` loads the configuration again (file and environment, as at
start). A configuration that does not load (invalid TOML, invalid values) is
refused with one ERROR line naming the reason, and the old one stays in force.
A good one replaces the resolver's rules in one step: tenants and their
Telegram ids, and which tenants a pairing may bind to, apply from the next
message; a turn already running is not touched. Message and reply size
limits and the model's step limit apply live too, and so do the models
(`[llm]`, `[models.*]`: `bridge.app.models`) and the token budgets. Settings that only take
effect at a restart (ports, home, Telegram token and mode,
session limits, personas, ...) are named in one WARNING line when they
differ. Around a reload systemd hears `RELOADING=1` then `READY=1` with a
STATUS= line. `watch_config` turns changes of the file (watchfiles, its
directory watched so an editor's rename-over counts) into reload requests;
requests that arrive during a reload are folded into one more reload.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from bridge.app.notify import Notifier
from bridge.app.wiring import access_rules
from bridge.core.config import ConfigError, Settings
from bridge.core.pairing import PairingStore
from bridge.core.tenants import TenantResolver

log = logging.getLogger("roost")

LIVE = frozenset(
    {"tenants", "limits.max_message_chars", "limits.max_reply_chars", "llm.max_steps"}
    | {"llm", "models", "style", "limits.daily_tokens", "limits.monthly_tokens"}  # models
)
"""Settings (top-level or dotted) a reload applies to the running daemon."""


def restart_only(old: Settings, new: Settings) -> list[str]:
    """Dotted names of the settings that differ but apply only after a restart."""
    changed: list[str] = []
    for name in Settings.model_fields:
        if name in LIVE:
            continue
        before, after = getattr(old, name), getattr(new, name)
        if before == after:
            continue
        if isinstance(before, BaseModel) and isinstance(after, BaseModel):
            changed += [
                f"{name}.{field}"
                for field in type(before).model_fields
                if getattr(before, field) != getattr(after, field) and f"{name}.{field}" not in LIVE
            ]
        else:
            changed.append(name)
    return changed


def one_line(text: str) -> str:
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())


class Reloader:
    """Applies a newly loaded configuration to a running roost, one reload at a time."""

    def __init__(
        self,
        settings: Settings,
        load: Callable[[], Settings],
        resolver: TenantResolver,
        pairing: PairingStore,
        notifier: Notifier,
        apply: Callable[[Settings], None] = lambda settings: None,
    ) -> None:
        self.settings = settings  # the configuration in force
        self._apply = apply  # the live limits (message and reply size, model steps)
        self._load, self._resolver, self._pairing = load, resolver, pairing
        self._notifier = notifier
        self._wanted = asyncio.Event()
        self.reloads = 0  # applied reloads (tests, STATUS)

    def request(self) -> None:
        """Ask for a reload (signal handler, file watcher); never blocks."""
        self._wanted.set()

    async def run(self) -> None:
        """Serve reload requests until cancelled."""
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            self.reload()

    def reload(self) -> bool:
        """Load and apply the configuration; False (old one kept) when it is refused."""
        monotonic_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self._notifier.send("RELOADING=1", f"MONOTONIC_USEC={monotonic_usec}")
        try:
            new = self._load()
        except ConfigError as exc:
            log.error(
                "reload refused, the old configuration stays in force: %s", one_line(str(exc))
            )
            self._notifier.send(
                "READY=1", "STATUS=reload refused: the old configuration is in force"
            )
            return False
        self._resolver.replace(access_rules(new, self._pairing))
        self._apply(new)
        stale = restart_only(self.settings, new)
        if stale:
            log.warning("reload: changed but applied only after a restart: %s", ", ".join(stale))
        self.settings = new
        self.reloads += 1
        log.info("reloaded the configuration: %d tenants configured", len(new.tenants))
        self._notifier.send("READY=1", "STATUS=reloaded")
        return True


async def watch_config(path: Path, reloader: Reloader, stop: asyncio.Event) -> None:
    """Request a reload whenever `path` changes (its directory is watched) until `stop`."""
    from watchfiles import awatch

    folder = path.parent
    if not folder.is_dir():
        log.info("config watch: %s does not exist; SIGHUP still reloads", folder)
        return
    name = path.name
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # we log the change ourselves

    def ours(_change: object, changed: str) -> bool:
        return Path(changed).name == name

    try:
        async for _ in awatch(folder, watch_filter=ours, stop_event=stop, recursive=False):
            log.info("config file %s changed: reloading", path)
            reloader.request()
    except (OSError, RuntimeError) as exc:  # e.g. out of inotify watches
        log.warning("config watch stopped (%s); SIGHUP still reloads", exc)
