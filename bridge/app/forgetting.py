"""`roost forget`, resumable: a durable marker first, idempotent steps, a re-run finishes it.

`forget_tenant` runs with no daemon on the home (`roost forget` holds the home
lock exclusively: what a daemon had queued or in flight, a recall batch or a
turn's end, would be written after the deletion). It writes
`$ROOST_HOME/forgetting/<tid>.json` (atomic, fsynced) before it deletes
anything, then: through the `Database` every store uses
(roost.db, or PostgreSQL with `[database] url`), every row keyed by the tenant
and its text indexes (one transaction: `storage.tenants.forget`), the tenant's
tree `tenants/<tid>/` and its files under `mcp/`; then the `data.forgotten`
audit record, then the marker goes. Before the tenant's rows, the rows of the
channels' durable inboxes whose messages came from the tenant's identities
(configured, paired or seen: `tenant_identities`), which have no tenant column
(stored before anyone knew whose they are; open ones hold the message's text,
which the next start would answer), and their direct Matrix rooms
(`bridge.channels.common.inbox_people`); first, so a re-run still finds the
paired identities. Each step finds what is left and deletes
it, so a run killed anywhere (kill -9, a power cut) is finished by running it
again; the counts of what was deleted are kept in the marker between runs (rows
and files only ever go down while the marker stands, so the larger count is the
true one). While a marker stands the tenant is barred: the daemon's access
check (`Access`, the web gate) serves it nothing, and `roost doctor` names it
(`pending`). Export ZIPs in `exports/` are the operator's copies to hand over
and stay (`export_files` lists them; the CLI names them). The record is written
once: the marker says when it is about to be written (`recording`), and a
re-run after a kill from then on looks for it in the chain (a `data.forgotten`
of this tenant since the marker's start) before writing it again.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from bridge.app.database import open_database
from bridge.app.export import Forgotten, audit_records, mcp_files
from bridge.app.forget_marks import marker_path
from bridge.app.home import chain_paths
from bridge.channels.common.inbox_people import forget_senders
from bridge.core.config_sections import DatabaseSettings
from bridge.storage.protocol import Database
from bridge.storage.tenants import forget as forget_rows
from bridge.types.file_tree import TreeChanged, remove_tree, walk
from bridge.types.tenant_dirs import TenantDirs

EXPORTS = "exports"

Record = Callable[[Forgotten], Awaitable[None]]


def _write(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(mode=0o700, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(state, fh, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dirfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)


def _read(path: Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def export_files(home: Path, tenant: str) -> list[Path]:
    """The tenant's ZIPs (and half-written ones) that `roost export` left in `exports/`."""
    folder = home / EXPORTS
    if not folder.is_dir():
        return []
    names = (f"roost-export-{tenant}-*.zip", f".roost-export-{tenant}-*.zip.*.tmp")
    return sorted({p for pattern in names for p in folder.glob(pattern)})


def _files(home: Path, tenant: str) -> tuple[int, int, list[str]]:
    """Delete the tenant's tree and MCP files; (files, bytes, mcp names)."""
    top = TenantDirs.of(home, tenant).root.parent  # tenants/<tid>
    files = size = 0
    with contextlib.suppress(TreeChanged):  # counted for the record; the removal is whole
        for entry in walk(top, skipped=[]):
            if not entry.is_dir():
                files += 1
                size += entry.st.st_size
    remove_tree(top)  # any depth or path length: a re-run always finishes
    loose = mcp_files(home, tenant)
    mcp = [p.name for p in loose]
    for path in loose:
        size += path.lstat().st_size
        path.unlink(missing_ok=True)
        files += 1
    return files, size, mcp


def begin(home: Path, tenant: str) -> dict[str, Any]:
    """Write the marker (durable) if it is not there yet; its state. From now on the
    tenant is barred: call it before opening anything of the tenant."""
    marker = marker_path(home, tenant)
    state = _read(marker) if marker.exists() else {}
    if not state:
        state = {"tenant": tenant, "started_ms": int(time.time() * 1000)}
        _write(marker, state)
    return state


async def tenant_identities(db: Database, tenant: str) -> set[tuple[str, str]]:
    """(channel, identity) the database ties to the tenant: paired, or seen talking."""
    rows = await db.fetch_all(
        "SELECT channel, identity FROM pairing_bindings WHERE tenant = ?"
        " UNION SELECT channel, identity FROM identity_seen WHERE tenant = ?",
        (tenant, tenant),
    )
    return {(str(c), str(i)) for c, i in rows}


async def forget_in_database(
    home: Path,
    tenant: str,
    settings: DatabaseSettings | None = None,
    identities: Iterable[tuple[str, str]] = (),
) -> dict[str, int]:
    """Delete the tenant's rows of every table and its text indexes through the
    `Database`: roost.db, or PostgreSQL with `[database] url`
    (`bridge.storage.tenants.forget`, one transaction), after the inbox rows of its
    identities (`identities`: the configured ones; the paired and seen ones are read
    here); rows deleted per table."""
    database = await open_database(home / "roost.db", settings)
    try:
        people = set(identities) | await tenant_identities(database, tenant)
        async with database.transaction():
            inboxes = await forget_senders(database, people)
        return {**await forget_rows(database, tenant), **inboxes}
    finally:
        await database.aclose()


async def forget_tenant(
    home: Path,
    tenant: str,
    record: Record,
    settings: DatabaseSettings | None = None,
    identities: Iterable[tuple[str, str]] = (),
) -> Forgotten:
    """Erase `tenant` (or finish an interrupted erasure); `record` writes the audit record.
    Rows go from the `Database` of `settings` (PostgreSQL when `[database] url` is set,
    else roost.db); `identities`: the tenant's configured (channel, identity)."""
    marker = marker_path(home, tenant)
    state = begin(home, tenant)
    if not state.get("recorded"):
        rows = await forget_in_database(home, tenant, settings, identities)
        done: dict[str, int] = state.get("rows", {})
        state["rows"] = {t: max(n, done.get(t, 0)) for t, n in (done | rows).items()}
        _write(marker, state)
        files, size, mcp = _files(home, tenant)
        state["files"] = max(files, state.get("files", 0))
        state["bytes"] = max(size, state.get("bytes", 0))
        state["mcp"] = list(dict.fromkeys([*state.get("mcp", []), *mcp]))
        _write(marker, state)
    gone = Forgotten(state["files"], state["rows"], state["bytes"], tuple(state["mcp"]))
    if not state.get("recorded"):
        if not (state.get("recording") and _recorded(home, tenant, state["started_ms"])):
            state["recording"] = True
            _write(marker, state)
            await record(gone)
        state["recorded"] = True
        _write(marker, state)
    marker.unlink()
    return gone


def _recorded(home: Path, tenant: str, since_ms: int) -> bool:
    """Whether the chain holds this forgetting's `data.forgotten` already."""
    for chain in chain_paths(home):
        for line in audit_records(chain, tenant):
            rec = json.loads(line)
            if rec.get("event") == "data.forgotten" and int(rec.get("ts", 0)) >= since_ms:
                return True
    return False
