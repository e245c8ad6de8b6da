"""`roost export --tenant T` and `roost forget --tenant T`: a person's data, handed over or erased.

The tables are found, not listed: every table of the `Database` (roost.db,
or PostgreSQL with `[database] url`) with a `tenant` column
(`bridge.storage.tenants`), so a table added by a later migration is exported
and forgotten without a change here. The ZIP is written in a worker thread;
its rows are read through the `Database` on the event loop (the history in
pages of `PAGE` messages, so an index of any size is never held whole).
The export is a ZIP (mode 0600) of the tenant's files (vault values left
out: names only), the web page's kept commands (`web-commands/`), one JSONL
file per table, the tool usage counters, and the audit records whose tenant
is T, with a README.txt saying what each file is. An export is a way out of roost:
every text in it (each table's JSONL, each file that reads as UTF-8) passes
the tenant's masker (`bridge.loadout.vault.masker_of`), streamed in pieces,
so a vault value a person left in a workspace file is `[vault:NAME]` there.
Forget (`bridge.app.forgetting`) deletes the files (vault included; under
`mcp/` its bearer token and its MCP servers' logs) and every row keyed by the
tenant in one transaction (`bridge.storage.tenants.forget`);
the audit chain keeps its records, which hold no content (ids, counts, hashes).
Both return counts (files, rows, audit records, bytes) that the callers
write to the chain as `data.exported` / `data.forgotten` (`export_details`,
`forgotten_details`: counts and who asked, never content). An export may be
given `max_bytes` (what the tenant's quota still allows, `/export`): the
ZIP is counted as it is written and abandoned with `QuotaExceeded` the
moment it would pass it; the temporary file is removed, so nothing
half-written is ever left or linked.
"""

from __future__ import annotations

import asyncio
import codecs
import itertools
import json
import os
import shutil
import sqlite3
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from bridge.audit.chains import chain_files
from bridge.core.quota import QuotaExceeded
from bridge.loadout.mask import Masker
from bridge.loadout.vault import masker_of
from bridge.recall.export import HISTORY_PAGE, history_line
from bridge.recall.index import Row
from bridge.recall.legacy import legacy_rows
from bridge.storage.placeholders import Params
from bridge.storage.protocol import Database
from bridge.storage.protocol import Row as DbRow
from bridge.storage.tenants import tenant_tables
from bridge.types.file_tree import GONE, Entry, until_still, walk
from bridge.types.messages import valid_unicode
from bridge.types.tenant_dirs import TenantDirs, check_tenant_id

USAGE_FILE = "usage.sqlite"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a ZIP entry holds
PAGE = 1000  # history messages read at a time
Fetch = Callable[[str, Params], list[DbRow]]  # a read of the Database, from the worker thread

README = """\
Everything roost holds about tenant {tenant}, exported {when}.

files/            the tenant's own files, as roost keeps them:
  USER.md           the profile roost shows the model about you
  STEERING.md       your always-on instructions
  memory/           memories (one Markdown file each), their journal and earlier
                    versions (.history/), when each was last used (.usage.json)
  skills/           your skills (SKILL.md files)
  forge/tools/      your personal tools: me.NAME.py (source) and me.NAME.json
                    (metadata: description, parameters, SHA-256, network hosts)
  workspace/        files your tools wrote
web-commands/     the slash commands you sent from the web page and their replies,
                  one JSON object a line, a file per chat
vault-names.txt   the names of your stored secrets (the values are not exported;
                  where one appears in a text it reads [vault:NAME])
tool-usage.jsonl  per tool: calls, errors, last use
db/TABLE.jsonl    your rows of each database table, one JSON object a line:
  sessions, session_messages   your conversation history, message by message
  chat_settings                per-chat settings (persona, ...)
  style_bullets                style notes learned from how you write, with state
  skill_grades, turn_log       how well each skill did for you
  jobs, outbox                 your scheduled jobs and messages queued for you
  pairing_*                    which chat identities are bound to you
history.jsonl     everything said in your chats and everything imported, one message a
                  line, in the format `roost import` reads (so it can be imported again)
audit.jsonl       the audit records about you: what happened and when, with ids,
                  counts and hashes only (no message text)
"""


@dataclass(frozen=True)
class Forgotten:
    files: int
    rows: dict[str, int]
    bytes: int = 0  # the size of the files deleted
    mcp: tuple[str, ...] = ()  # of those, under $ROOST_HOME/mcp: its token, its servers' logs


@dataclass(frozen=True)
class Exported:
    names: list[str]  # the entries of the ZIP
    files: int  # the tenant's own files inside
    rows: int  # database rows inside
    audit: int  # audit records inside
    bytes: int  # the ZIP's size


def export_details(done: Exported, by: str, channel: str | None = None) -> dict[str, object]:
    """The `data.exported` record: counts and who asked (`operator` | `user`), no content."""
    details: dict[str, object] = {
        "files": done.files,
        "rows": done.rows,
        "audit_records": done.audit,
        "bytes": done.bytes,
        "by": by,
    }
    return details | ({"channel": channel} if channel else {})


def forgotten_details(gone: Forgotten, by: str) -> dict[str, object]:
    """The `data.forgotten` record: what was deleted, counted, and who asked."""
    return {"files": gone.files, "rows": sum(gone.rows.values()), "bytes": gone.bytes, "by": by}


def audit_records(chain: Path, tenant: str) -> Iterator[bytes]:
    """The chain's complete lines whose record names `tenant`, streamed."""
    if not chain.exists():
        return
    with chain.open("rb") as fh:
        for line in fh:
            if not line.endswith(b"\n"):
                break  # a torn tail is not a record
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("tenant") == tenant:
                yield line


def usage_rows(tools: Path) -> Iterator[dict[str, object]]:
    path = tools / USAGE_FILE
    if not path.exists():
        return
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        for table in [
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]:
            cursor = conn.execute(f'SELECT * FROM "{table}"')
            columns = [d[0] for d in cursor.description]
            for row in cursor:
                yield dict(zip(columns, row, strict=True))
    finally:
        conn.close()


def _jsonl(rows: Iterable[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def _tenant_files(dirs: TenantDirs) -> Iterator[Entry]:
    """The tenant's regular files (the vault's folder and the tools' usage database left
    out: the ZIP has their own parts), by name, at any depth or path length
    (`file_tree.walk`); each must be read before the next is asked for."""
    vault = dirs.vault.relative_to(dirs.root).parts
    for entry in walk(dirs.root, prune=lambda e: e.parts == vault):
        if entry.is_file() and not entry.name.startswith(USAGE_FILE) and entry.parts != vault:
            yield entry


class _Capped:
    """The ZIP's file, counted: `QuotaExceeded` before it would grow past `limit` bytes."""

    def __init__(self, raw: BinaryIO, limit: int, used: int) -> None:
        self._raw, self._limit, self._used = raw, limit, used

    def write(self, data: bytes) -> int:
        end = self._raw.tell() + len(data)
        if end > self._limit:
            raise QuotaExceeded(self._used, self._used + self._limit, end)
        return self._raw.write(data)

    def tell(self) -> int:
        return self._raw.tell()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def flush(self) -> None:
        self._raw.flush()


async def write_export(
    home: Path,
    db: Database,
    tenant: str,
    out: Path,
    when: str,
    *,
    max_bytes: int | None = None,
    used: int = 0,
) -> Exported:
    """Write the ZIP of `tenant` to `out` (0600, created new); return what is inside.
    With `max_bytes`, a ZIP that would grow past it is abandoned (`QuotaExceeded`,
    with `used`, what the tenant holds besides, for the figures)."""
    loop = asyncio.get_running_loop()
    columns = await db.tables()
    tables = {t: columns[t] for t in await tenant_tables(db) if not t.startswith("recall_")}

    def fetch(sql: str, params: Params) -> list[DbRow]:  # on the loop, awaited by the thread
        return asyncio.run_coroutine_threadsafe(db.fetch_all(sql, params), loop).result()

    dirs = TenantDirs.of(home, tenant)

    def whole() -> Exported:  # begun again when a folder moves under the walk
        return _write(home, fetch, tables, dirs, out, when, max_bytes, used)

    return await asyncio.to_thread(until_still, whole)


def _write(
    home: Path,
    fetch: Fetch,
    tables: dict[str, tuple[str, ...]],
    dirs: TenantDirs,
    out: Path,
    when: str,
    max_bytes: int | None,
    used: int,
) -> Exported:
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as raw:
            sink = raw if max_bytes is None else _Capped(raw, max_bytes, used)
            zf = zipfile.ZipFile(cast(BinaryIO, sink), "w", zipfile.ZIP_DEFLATED)
            with zf:
                files, rows, records = _fill(zf, home, fetch, tables, dirs, when)
                names = zf.namelist()
            raw.flush()
            os.fsync(raw.fileno())
        os.link(tmp, out)  # never over an existing file
    finally:
        tmp.unlink(missing_ok=True)
    return Exported(names, files, rows, records, out.stat().st_size)


def _history(fetch: Fetch, tenant: str) -> Iterator[Row]:
    """The tenant's recall messages in the order stored, read `PAGE` at a time."""
    after = -1
    while True:
        page = fetch(HISTORY_PAGE, (tenant, after, PAGE))
        yield from (Row(*found) for found in page)
        if len(page) < PAGE:
            return
        after = int(page[-1][0])


def _fill(
    zf: zipfile.ZipFile,
    home: Path,
    fetch: Fetch,
    tables: dict[str, tuple[str, ...]],
    dirs: TenantDirs,
    when: str,
) -> tuple[int, int, int]:
    """Everything of the tenant into the ZIP; (files, rows, audit records) inside."""
    tenant, files, rows = dirs.tenant, 0, 0
    zf.writestr("README.txt", README.format(tenant=tenant, when=when))
    mask = masker_of(dirs)
    for entry in _tenant_files(dirs):
        files += _add_file(
            zf, entry, "files/" + valid_unicode(entry.rel), mask
        )  # a ZIP names no lone surrogate
    for entry in walk(dirs.web_commands):  # beside the files: no saved tool reads them
        if entry.is_file() and entry.name.endswith(".jsonl"):
            files += _add_file(zf, entry, "web-commands/" + valid_unicode(entry.rel), mask)
    vault = sorted(p.name for p in dirs.vault.iterdir()) if dirs.vault.is_dir() else []
    zf.writestr("vault-names.txt", "".join(name + "\n" for name in vault))
    zf.writestr("tool-usage.jsonl", _jsonl(usage_rows(dirs.tools)))
    for table, columns in tables.items():  # the recall index: history.jsonl below
        found = fetch(f'SELECT * FROM "{table}" WHERE tenant = ?', (tenant,))
        text = _jsonl(dict(zip(columns, row, strict=True)) for row in found)
        rows += text.count("\n")
        zf.writestr(f"db/{table}.jsonl", mask.mask(text))
    with zf.open("history.jsonl", "w") as history:  # streamed: any size, masked
        kept = _history(fetch, tenant)
        for row in itertools.chain(legacy_rows(dirs), kept):  # a file not moved yet, first
            line = history_line(row)
            history.write(mask.mask(line.decode("utf-8")).encode("utf-8"))
    records = [r for chain in chain_files(home / "audit") for r in audit_records(chain, tenant)]
    zf.writestr("audit.jsonl", b"".join(records))
    return files, rows, len(records)


def _is_text(fh: BinaryIO) -> bool:
    """Whether the whole file reads as UTF-8 (read in pieces; `fh` is left at its start)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        while chunk := fh.read(1 << 20):
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    finally:
        fh.seek(0)
    return True


def _add_file(zf: zipfile.ZipFile, entry: Entry, name: str, mask: Masker) -> int:
    """A file into the ZIP: a UTF-8 text through the masker (in pieces), else as it is
    (no text of a binary file can be masked). Read through its folder's descriptor: a
    path of any length. 0 when it was removed (or became a link) since it was listed."""
    try:
        fd = entry.open()
    except OSError as exc:
        if exc.errno in GONE:
            return 0
        raise
    when = max(time.localtime(entry.st.st_mtime)[:6], ZIP_EPOCH)
    info = zipfile.ZipInfo(name, when)
    info.external_attr = (entry.st.st_mode & 0xFFFF) << 16
    info.compress_type = zf.compression
    with os.fdopen(fd, "rb") as fh, zf.open(info, "w") as out:
        if not _is_text(fh):
            shutil.copyfileobj(fh, out, 1 << 20)
            return 1
        decoder, stream = codecs.getincrementaldecoder("utf-8")(), mask.stream()
        while chunk := fh.read(1 << 20):
            out.write(stream.feed(decoder.decode(chunk)).encode())
        out.write((stream.feed(decoder.decode(b"", final=True)) + stream.flush()).encode())
    return 1


def mcp_files(home: Path, tenant: str) -> list[Path]:
    """The tenant's files under `$ROOST_HOME/mcp`: the bearer token of `roost mcp --http`
    and the stderr logs of its external MCP servers (tenant ids hold no `.`)."""
    folder, tenant = home / "mcp", check_tenant_id(tenant)
    found = [folder / f"{tenant}.token", *sorted(folder.glob(f"{tenant}.*.log"))]
    return [path for path in found if path.is_file() or path.is_symlink()]
