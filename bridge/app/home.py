"""The home directory, its audit chain and operator events: the helpers every command shares.

`prepare_home` creates `$ROOST_HOME` (0700) or tightens it; `open_chain`
opens the audit chain of the home with its HMAC key; `record_event` appends
one event from an operator command without a running daemon. Any of them
that meets an unusable home or key raises `ConfigError` (exit 78).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

from bridge.audit import AuditChain, HmacKeyError, load_hmac_key
from bridge.audit.chains import chain_file, chain_files, check_instance
from bridge.audit.schema import schemas_for
from bridge.audit.store import head_path, inspect_tail
from bridge.core.config import ConfigError, Settings
from bridge.types.platform import Platforms

log = logging.getLogger("roost")


def chain_path(home: Path, instance: str | None = None) -> Path:
    """Where the audit chain an instance of a home appends to lives (None: the single
    chain of a home served by one process; `bridge.audit.chains`)."""
    return chain_file(home / "audit", instance)


def chain_paths(home: Path) -> list[Path]:
    """Every audit chain of a home (one per instance that ever wrote), for readers."""
    return chain_files(home / "audit")


def tighten(path: Path) -> None:
    """Make an existing directory of roost's 0700; say so when it was looser."""
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        path.chmod(0o700)
        log.warning(
            "%s was readable by others (mode %04o); changed to 0700 (it holds private data)",
            path,
            mode,
        )


def prepare_home(home: Path) -> None:
    """Create `$ROOST_HOME` (0700) or tighten it to 0700; an unusable home is a config error."""
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        tighten(home)
        (home / "tenants").mkdir(mode=0o700, exist_ok=True)
        tighten(home / "tenants")
        if not os.access(home, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable")
    except OSError as exc:
        raise ConfigError(
            f"invalid configuration: home: cannot use {home} ({exc.strerror}); "
            "set ROOST_HOME to a writable directory"
        ) from None


def chain_instance(settings: Settings) -> str | None:
    """Whose chain this process appends to: with `[database] url` (instances may share
    the home) the instance's own, named by `[cluster] instance` (default: the host
    name); on SQLite (one process per home, `instance.lock`) the home's single chain."""
    if settings.database.url is None:
        return None
    name = settings.cluster.instance or socket.gethostname()
    try:
        return check_instance(name)
    except ValueError as exc:
        raise ConfigError(f"invalid configuration: cluster.instance: {exc}") from None


async def open_chain(
    settings: Settings, clock: Callable[[], float], platforms: Platforms
) -> AuditChain:
    """The audit chain this process appends to (`chain_instance`), with the HMAC key
    when one is configured; its records keep the channels (and their identities) the
    `platforms` declare."""
    path = chain_path(settings.home, chain_instance(settings))
    try:
        key = load_hmac_key(settings.audit_hmac_key_file, path.parent)
    except HmacKeyError as exc:
        raise ConfigError(f"invalid configuration: audit_hmac_key_file: {exc}") from exc
    chain = AuditChain(path, hmac_key=key, clock=clock, schemas=schemas_for(platforms))
    await chain.open()
    return chain


def check_chain_key(settings: Settings) -> None:
    """`ChainKeyMismatch` (a `ConfigError`: the CLI's one line, exit 78) now, before an
    operator command changes anything, when it could not append its record afterwards:
    a keyed chain and no key here, or the other way round. Without it the change was
    made and went unrecorded. Read-only; a chain not made yet passes."""
    path = chain_path(settings.home, chain_instance(settings))
    try:
        key = load_hmac_key(settings.audit_hmac_key_file, path.parent)
    except HmacKeyError as exc:
        raise ConfigError(f"invalid configuration: audit_hmac_key_file: {exc}") from exc
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        inspect_tail(fd, head_path(path), key)
    finally:
        os.close(fd)


async def record_event(
    settings: Settings,
    event: str,
    tenant: str | None,
    details: dict[str, object],
    platforms: Platforms,
) -> None:
    """Append one event from an operator command (no daemon needed; the chain is locked)."""
    chain = await open_chain(settings, time.time, platforms)
    try:
        await chain.emit(event, tenant, details)
    finally:
        await chain.aclose()
