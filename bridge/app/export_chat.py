"""`/export` in a private chat: the person's own ZIP, handed out as a file of the reply.

The ZIP is the one `roost export --tenant T` writes (`bridge.app.export`),
made in a worker thread with its rows read through the daemon's `Database`, and
kept in the tenant's `out/` directory (beside `global/`, so never inside a
later export; `roost forget` removes it with the rest). Only the newest
`KEEP` exports stay there. In a group the command is refused with the
reason: the ZIP holds the person's memories and conversations. Each export
is audited as `data.exported` (`by` user, counts only). With a quota
(`[quota] tenant_bytes`, `bridge.core.quota`) the ZIP counts like any file
of the tenant: it is written only as far as the quota allows, and one that
would not fit is abandoned (no file left) with a reply giving the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.core.commands import Command, CommandContext
from bridge.core.quota import QuotaExceeded, TenantQuota, size_text
from bridge.storage.protocol import Database
from bridge.types.audit_sink import AuditSink
from bridge.types.file_tree import TRIES, TreeChanged
from bridge.types.messages import Final, OutFile
from bridge.types.tenant_dirs import TenantDirs

if TYPE_CHECKING:  # the export code is imported when a person asks for one
    from bridge.app.export import Exported

KEEP = 2  # exports kept in out/ (the newest); older ones are removed before a new one
ZIP = "application/zip"
GROUP = (
    "/export works only in a private chat with me: the file holds your memories, "
    "conversations and tools, and everyone here would see it. Send /export to me directly."
)


def prune(out: Path, keep: int) -> int:
    """Remove all but the newest `keep - 1` exports, making room for one more; the
    bytes freed."""
    old = sorted(out.glob("roost-export-*.zip"))
    freed = 0
    for path in old[: max(0, len(old) - (keep - 1))]:
        with contextlib.suppress(FileNotFoundError):
            freed += path.stat().st_size
            path.unlink()
    return freed


def _room(dirs: TenantDirs, quota: TenantQuota | None) -> tuple[int | None, int]:
    """Make room in out/ (the oldest exports go) and read the quota: (the ZIP's limit
    or None, the bytes the tenant holds besides). Walks files: a worker thread."""
    dirs.out.mkdir(mode=0o700, parents=True, exist_ok=True)
    freed = prune(dirs.out, KEEP)
    if quota is None:
        return None, 0
    quota.charge(dirs, -freed)
    if not quota.limit:
        return None, 0
    return quota.remaining(dirs), quota.usage(dirs)


async def export_to(
    home: Path,
    db: Database,
    dirs: TenantDirs,
    when: datetime,
    quota: TenantQuota | None = None,
) -> tuple[Path, Exported]:
    """Write a new export of `dirs.tenant` into its out/ directory (the files' work in
    worker threads, the rows read through `db`); `QuotaExceeded` (nothing written) when
    it does not fit in the tenant's quota."""
    from bridge.app.export import write_export

    limit, used = await asyncio.to_thread(_room, dirs, quota)
    path = dirs.out / f"roost-export-{dirs.tenant}-{when:%Y%m%d-%H%M%S}.zip"
    stamp = when.isoformat("T", "seconds")
    done = await write_export(home, db, dirs.tenant, path, stamp, max_bytes=limit, used=used)
    if quota is not None:
        quota.charge(dirs, done.bytes)
    return path, done


def over_quota(exc: QuotaExceeded) -> str:
    return (
        f"Not exported: the ZIP does not fit in your storage ({size_text(exc.used)} of "
        f"{size_text(exc.limit)} used; [quota] tenant_bytes). Remove files from your "
        "workspace with a tool, or ask the operator to run `roost export` for you."
    )


def _size(n: int) -> str:
    return f"{n / 1_048_576:.1f} MB" if n >= 1_048_576 else f"{max(1, n // 1024)} KB"


class ExportCommands:
    """The /export row of the chat command table."""

    def __init__(
        self,
        home: Path,
        db: Database,
        audit: AuditSink,
        clock: Callable[[], float],
        quota: TenantQuota | None = None,
    ) -> None:
        self._home, self._db, self._audit, self._clock = home, db, audit, clock
        self._quota = quota

    def commands(self) -> Iterable[Command]:
        return (
            Command(
                "export",
                "/export",
                "a ZIP of everything roost keeps about you (private chats only)",
                self.export,
            ),
        )

    async def export(self, ctx: CommandContext, args: str) -> str | Final:
        if not ctx.inbound.is_private:
            return GROUP
        when = datetime.fromtimestamp(self._clock(), UTC)
        try:
            path, done = await export_to(self._home, self._db, ctx.dirs, when, self._quota)
        except QuotaExceeded as exc:
            return over_quota(exc)
        except TreeChanged:
            return (
                f"Not exported: folders in your workspace kept moving while they were read "
                f"({TRIES} tries; a tool of yours renaming them?). Send /export again."
            )
        from bridge.app.export import export_details

        details = export_details(done, "user", ctx.inbound.channel)
        await self._audit.emit("data.exported", ctx.tenant, details)
        text = (
            f"Here is everything roost keeps about you ({_size(done.bytes)}): {done.files} "
            f"files, {done.rows} database rows and {done.audit} audit records. README.txt "
            "inside says what each part is; secret values stay in the vault (names only)."
        )
        return Final(text, "command", (OutFile(path, path.name, ZIP),))
