"""Reload without restart: SIGHUP or a change of the config file re-reads the configuration.

`Reloader.reload()` loads the configuration again (file and environment, as at
start). A configuration that does not load (invalid TOML, invalid values, or
any other error while it is read) is refused with one ERROR line naming the
reason, and the old one stays in force; so is a config file that vanished (moved
or deleted) or is empty while the configuration in force was read from one: a
reload never falls back to the built-in defaults (every tenant dropped, `[llm]`
pointed at api.openai.com); a restart does, as a first start without a file does.
Likewise a configuration that would drop every tenant at once (all their sections
gone, commented out or renamed away, none left: a file saved half-way, a wrong file)
is refused, naming them: every person would be a stranger from the next message on.
A restart applies it when that is meant.
`Reloader.run` outlives any failure of one reload (one ERROR line, READY=1 again),
so later reloads still apply.
A good one is handed to every registered `OnReload` callback (tenants and
their Telegram ids, limits, personas, the models (`[llm]`, `[models.*]`)
and token budgets, ...: the rows of `bridge.app.live`),
each naming the settings it applies live; a turn already running is not
touched. Settings that differ and no callback applies (ports, home, Telegram
token and mode, ...) are named in one WARNING line. Around a reload systemd
hears `RELOADING=1` then `READY=1` with a STATUS= line.

Reloads are serialised (one task runs them) and coalesced at the root: a
request whose configuration fingerprint (the file's bytes and the systemd
credential files, hashed) equals the last one attempted, applied or refused,
does nothing but one INFO line. So a config write followed by SIGHUP (the
file watcher and the signal both ask) reloads once and reports a bad file
once. `watch_config` turns changes of the file (watchfiles, its directory
watched so an editor's rename-over counts) into reload requests; `changes` asks
watchfiles' watcher in a thread of its own, without anyio (`awatch`'s way).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from bridge.app.logging_setup import redact_also, secret_values
from bridge.app.notify import Notifier
from bridge.core.config import ConfigError, Settings
from bridge.core.credentials import CREDENTIALS
from bridge.core.words import count

if TYPE_CHECKING:
    from watchfiles import Change

log = logging.getLogger("roost")

HMAC_CREDENTIAL = "audit-hmac-key"


@dataclass(frozen=True, slots=True)
class OnReload:
    """A callback a good reload runs with the new settings, and the settings it makes live
    (top-level names or dotted `section.key`)."""

    live: frozenset[str]
    apply: Callable[[Settings], None]

    @classmethod
    def of(cls, live: Iterable[str], apply: Callable[[Settings], None]) -> OnReload:
        return cls(frozenset(live), apply)


def restart_only(old: Settings, new: Settings, live: frozenset[str]) -> list[str]:
    """Dotted names of the settings that differ but apply only after a restart."""
    changed: list[str] = []
    for name in Settings.model_fields:
        if name in live:
            continue
        before, after = getattr(old, name), getattr(new, name)
        if before == after:
            continue
        if isinstance(before, BaseModel) and isinstance(after, BaseModel):
            changed += [
                f"{name}.{field}"
                for field in type(before).model_fields
                if getattr(before, field) != getattr(after, field) and f"{name}.{field}" not in live
            ]
        else:
            changed.append(name)
    return changed


def fingerprint(path: Path, env: Mapping[str, str]) -> str:
    """A hash of what a reload reads that can change under a running process: the
    config file's bytes and the credential files (the environment cannot change)."""
    digest = hashlib.sha256()
    names = [name for name, _, _ in CREDENTIALS] + [HMAC_CREDENTIAL]
    where = env.get("CREDENTIALS_DIRECTORY")
    places = [path] + [Path(where) / name for name in names] if where else [path]
    for place in places:
        try:
            data = place.read_bytes()
        except OSError as exc:
            data = f"\0unreadable: {exc.errno}".encode()
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def file_gone(path: Path) -> str | None:
    """Why `path` cannot be the configuration a reload reads (it is not a file, or holds
    nothing but white space), as a ConfigError's message; None when it has content."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return (
            f"invalid configuration: {path} is gone (moved or deleted); put it back, "
            "or restart roost to run on the built-in defaults"
        )
    except OSError:
        return None  # unreadable: loading it names the reason
    if not data.strip():
        return (
            f"invalid configuration: {path} is empty; write the configuration into it, "
            "or restart roost to run on the built-in defaults"
        )
    return None


def every_tenant_dropped(old: Settings, new: Settings, path: Path | None) -> str | None:
    """Why a reload from `old` to `new` is refused when `new` configures no tenant and
    `old` did (pure): who would lose access, and that a restart applies it. The local
    tenant does not count: it is there with or without its `[tenants.local]` (the web
    page and the terminal), so dropping that section alone refuses no one."""
    names = sorted(set(old.tenants) - {old.local_tenant})
    if not names or set(new.tenants) - {new.local_tenant}:
        return None
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    where = path if path is not None else "the configuration"
    return (
        f"{where}: no tenant is configured any more (there were {shown}): every person "
        "would be refused from their next message on; if that is meant, restart roost (a "
        "start applies it)"
    )


def one_line(text: str) -> str:
    """A message's lines on one line: "; " between them, a space after a line's colon
    ("invalid configuration: llm.model: …", never "invalid configuration:; …") (pure)."""
    out = ""
    for part in (p.strip() for p in text.splitlines()):
        if part:
            out += (" " if out.endswith(":") else "; ") + part if out else part
    return out


def _reason(exc: Exception) -> str:
    """A ConfigError's own message; any other error with its type (it is not ours)."""
    text = one_line(str(exc))
    if isinstance(exc, ConfigError):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Reloader:
    """Applies a newly loaded configuration to a running roost, one reload at a time."""

    def __init__(
        self,
        settings: Settings,
        load: Callable[[], Settings],
        notifier: Notifier,
        *,
        fingerprint: Callable[[], str] = lambda: "",
        hooks: Iterable[OnReload] = (),
        path: Path | None = None,
    ) -> None:
        self.settings = settings  # the configuration in force
        # what the restart-only settings still are: the start's, whatever reloads read since
        self.started = settings
        self._load, self._notifier = load, notifier
        self._fingerprint = fingerprint
        self._attempted = fingerprint()  # what the configuration in force was read from
        self._last_refused = False
        # the config file, and whether the configuration in force was read from it
        self._path = path
        self._from_file = path is not None and file_gone(path) is None
        self.hooks: list[OnReload] = list(hooks)
        self._wanted = asyncio.Event()
        self.reloads = 0  # applied reloads (tests, STATUS)

    def on_reload(self, live: Iterable[str], apply: Callable[[Settings], None]) -> None:
        """Register a callback for good reloads; `live` names the settings it applies."""
        self.hooks.append(OnReload.of(live, apply))

    @property
    def live(self) -> frozenset[str]:
        return frozenset().union(*(hook.live for hook in self.hooks))

    def request(self) -> None:
        """Ask for a reload (signal handler, file watcher); never blocks."""
        self._wanted.set()

    async def run(self) -> None:
        """Serve reload requests until cancelled (the only caller of `reload`: serialised).
        A reload that fails in any way is logged and ends with READY=1; the task goes on."""
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            try:
                self.reload()
            except Exception as exc:  # the task must outlive any one reload
                self._last_refused = True
                log.error("reload failed, the old configuration stays in force: %s", _reason(exc))
                self._notifier.send(
                    "READY=1", "STATUS=reload failed: the old configuration is in force"
                )

    def reload(self) -> bool | None:
        """Load and apply the configuration: True applied, False refused (the old one
        kept), None unchanged since the last attempt (nothing done)."""
        seen = self._fingerprint()
        if seen == self._attempted:
            how = "refused" if self._last_refused else "applied"
            log.info("reload: the configuration is unchanged since the last one (%s)", how)
            return None
        self._attempted = seen
        monotonic_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self._notifier.send("RELOADING=1", f"MONOTONIC_USEC={monotonic_usec}")
        gone = file_gone(self._path) if self._path is not None else None
        try:
            if gone is not None and self._from_file:
                raise ConfigError(gone)
            new = self._load()
            dropped = every_tenant_dropped(self.settings, new, self._path)
            if dropped is not None:
                raise ConfigError(dropped)
        except Exception as exc:  # ConfigError, or whatever else reading it raised
            self._last_refused = True
            log.error("reload refused, the old configuration stays in force: %s", _reason(exc))
            self._notifier.send(
                "READY=1", "STATUS=reload refused: the old configuration is in force"
            )
            return False
        self._last_refused = False
        self._from_file = gone is None
        self._apply(new)
        return True

    def _apply(self, new: Settings) -> None:
        for secret in secret_values(new):  # a key or page token the reload brought in
            redact_also(secret)
        for hook in self.hooks:
            try:
                hook.apply(new)
            except Exception:  # one concern failing must not leave the others unapplied
                log.exception("reload: applying %s failed", ", ".join(sorted(hook.live)))
        stale = restart_only(self.started, new, self.live)
        if stale:
            log.warning("reload: changed but applied only after a restart: %s", ", ".join(stale))
        self.settings = new
        self.reloads += 1
        log.info("reloaded the configuration: %s configured", count(len(new.tenants), "tenant"))
        self._notifier.send("READY=1", "STATUS=reloaded")


# how often watchfiles' thread looks for changes and at `stop` (taking the GIL): its
# default, 50 ms, woke an idle daemon 20 times a second; 500 ms made every stop wait up
# to half a second for the thread after the drain (SIGTERM to exit, `roost serve`
# alone: 126-213 ms against 67-152 at 100, session 45; the idle daemon's CPU 0.13 % of
# a core at 500, 0.20 % at 100, bench/idle.py); a change reloads within about 2 s
# (the 1.6 s debounce, then a look)
STEP_MS = 100
APPEAR_LOOK_MS = 5_000  # while the config's folder does not exist: a look this often too
DEBOUNCE_MS = 1_600  # watchfiles' default: changes within it come as one answer
LOOK_MS = 5_000  # watchfiles' default on Linux: its thread answers at least this often


async def changes(
    folder: Path,
    keep: Callable[[Change, str], bool],
    stop: asyncio.Event,
    *,
    look_ms: int = LOOK_MS,
    on_timeout: bool = False,
) -> AsyncIterator[set[tuple[Change, str]]]:
    """The changes in `folder` (not its subfolders) that `keep(change, path)` keeps, a set
    per answer of watchfiles' watcher, until `stop` is set; with `on_timeout`, an empty
    set too when `look_ms` passed without one. watchfiles' `awatch` on asyncio alone:
    the same watcher (`RustNotify`, its `WATCHFILES_*` variables read as `awatch` reads
    them), asked in a thread of its own, without the anyio backend `awatch` runs it
    through (about 30 ms of CPU on the way to the daemon's ready line). Cancelled, it
    sets `stop` (as `awatch` does) and waits for the thread to see it."""
    from watchfiles import Change
    from watchfiles._rust_notify import RustNotify
    from watchfiles.main import (
        _default_debug,
        _default_force_polling,
        _default_ignore_permission_denied,
        _default_poll_delay_ms,
    )

    loop = asyncio.get_running_loop()
    with (
        RustNotify(
            [str(folder)],
            _default_debug(None),
            _default_force_polling(None),
            _default_poll_delay_ms(300),
            False,  # recursive
            _default_ignore_permission_denied(None),
        ) as watcher,
        ThreadPoolExecutor(1, thread_name_prefix="roost-config-watch") as thread,
    ):
        while True:
            asked = loop.run_in_executor(thread, watcher.watch, DEBOUNCE_MS, STEP_MS, look_ms, stop)
            try:
                raw = await asyncio.shield(asked)
            except asyncio.CancelledError:
                stop.set()  # the thread sees it within STEP_MS
                await asyncio.wait([asked])
                raise
            if raw == "timeout":
                if on_timeout:
                    yield set()
            elif raw == "stop":
                return
            elif raw == "signal":
                raise RuntimeError("watch thread unexpectedly received a signal")
            else:
                kept = {(Change(c), p) for c, p in raw if keep(Change(c), p)}
                if kept:
                    yield kept


async def watch_config(path: Path, reloader: Reloader, stop: asyncio.Event) -> None:
    """Request a reload whenever `path` changes (its directory is watched) until `stop`.

    A folder that does not exist yet (`~/.config/roost` on a first run) is waited for:
    the nearest existing ancestor is watched for the next folder on the way, and once
    the config's own folder exists, a file already in it is read at once."""
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # we log the change ourselves
    folder = path.parent
    waited = False
    try:
        while not folder.is_dir():
            ancestor, step = _nearest(folder)
            if ancestor is None:
                log.info("config watch: %s does not exist; SIGHUP still reloads", folder)
                return
            if not waited:
                log.info("config watch: %s does not exist yet; waiting for it", folder)
                waited = True
            if not await _appears(ancestor, step, stop):
                return  # stopped
        if waited and _is_file(path):
            log.info("config file %s appeared: reloading", path)
            reloader.request()
        name = path.name

        def ours(_change: object, changed: str) -> bool:
            return Path(changed).name == name

        async for _ in changes(folder, ours, stop):
            log.info("config file %s changed: reloading", path)
            reloader.request()
    except (OSError, RuntimeError) as exc:  # e.g. out of inotify watches
        log.warning("config watch stopped (%s); SIGHUP still reloads", exc)


def _is_file(path: Path) -> bool:
    return path.is_file()


def _nearest(folder: Path) -> tuple[Path | None, str]:
    """The nearest existing directory above `folder` and the name of the next folder on
    the way down to it; (None, "") when no ancestor is a directory."""
    child = folder
    for parent in folder.parents:
        if parent.is_dir():
            return parent, child.name
        child = parent
    return None, ""


async def _appears(ancestor: Path, name: str, stop: asyncio.Event) -> bool:
    """Wait until `ancestor/name` exists (True) or `stop` is set (False)."""

    def ours(_change: object, changed: str) -> bool:
        return Path(changed).name == name

    if (ancestor / name).exists():  # made before the watch began
        return True
    # an empty answer every few seconds as well: a folder made between the look above
    # and the watch's start is seen then (only while waiting: a first run's case)
    async for _ in changes(ancestor, ours, stop, look_ms=APPEAR_LOOK_MS, on_timeout=True):
        if (ancestor / name).exists():
            return True
    return False
