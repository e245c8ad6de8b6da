"""`roost import --tenant T [--format jsonl|chatgpt|claude] FILE`: past conversations in.

Streams the file into the tenant's recall index (bridge.recall.importer) with
a progress bar on a terminal (bytes read, messages so far), then prints the
summary: conversations, messages, added, already there, not indexed, and
each skipped line or conversation by number, then how many memory
proposals (facts the person stated about themselves) wait for them in a chat
(`/memory proposals`; nothing is saved as a note without their yes). May
run beside the daemon (the index is a WAL SQLite file; each batch is one short transaction). Records
`history.imported` (counts only). Exit 0, or 2 when the file cannot be read
or is not the format asked for. With `[llm.embeddings]` on, the new messages'
vectors are computed after the summary (with their own progress bar); when
the model cannot be reached the daemon computes them later in the background.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import sys
from pathlib import Path

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from bridge.app.channels_up import PLATFORMS
from bridge.app.database import open_database
from bridge.app.home import check_chain_key, record_event
from bridge.cli.rows import tenant_arg
from bridge.cli.tenant_check import unknown_tenant
from bridge.core.config import Settings
from bridge.llm.embeddings import EmbeddingsClient, embeddings_client
from bridge.loadout.vault import Vault
from bridge.memory.files import Topic
from bridge.memory.proposals import ProposalBox
from bridge.memory.store import MemoryStore
from bridge.recall.backfill import Backfill
from bridge.recall.embedder import EmbedError
from bridge.recall.formats import FORMATS
from bridge.recall.importer import Summary, import_stream
from bridge.recall.indexer import Indexer
from bridge.recall.jsonstream import BadJson
from bridge.recall.wiring import vault_mask
from bridge.screening.screen import secret_kinds
from bridge.types.audit_sink import NullAudit
from bridge.types.tenant_dirs import TenantDirs


def import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, required=True, help="whose history this is")
    p.add_argument(
        "--format", choices=FORMATS, default="jsonl", help="the file's format (default: jsonl)"
    )
    p.add_argument("file", type=Path, help="the export (conversations.json) or a JSONL file")


def run_import(args: argparse.Namespace, settings: Settings) -> int:
    refusal = unknown_tenant(settings, args.tenant, "import", files_do=True)
    if refusal is not None:  # a typo would otherwise become a tenant holding the history
        print(refusal, file=sys.stderr)
        return 2
    path: Path = args.file
    if not path.is_file():
        print(f"roost import: {path} is not a file", file=sys.stderr)
        return 2
    if args.format == "jsonl" and _one_array(path):
        print(
            f"roost import: {path} is one JSON array, not JSONL (one message a line): a "
            "ChatGPT or Claude export (conversations.json)? Give --format chatgpt or "
            "--format claude. Nothing was imported",
            file=sys.stderr,
        )
        return 2
    check_chain_key(settings)  # its record could not follow: nothing is imported
    dirs = TenantDirs.of(settings.home, args.tenant).ensure()
    try:
        summary = asyncio.run(_imported(settings, dirs, args.format, path))
    except BadJson as exc:
        print(f"roost import: {path}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # unreadable (permissions, an I/O error): a line, not a traceback
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise  # not the file's fault: `roost` says "disk full" (bridge/cli/main.py)
        print(
            f"roost import: cannot read {path}: {exc.strerror or exc}. What was read before "
            "it is kept; run it again once the file reads: known messages are not added twice",
            file=sys.stderr,
        )
        return 2
    asyncio.run(
        record_event(
            settings, "history.imported", args.tenant, summary.details(args.format), PLATFORMS
        )
    )
    print(f"imported {path.name} into tenant {args.tenant}:")
    for line in summary.lines():
        print(line)
    offered = ProposalBox(dirs.memory).offer(summary.facts.values(), _topics(dirs))
    waiting = len(ProposalBox(dirs.memory).waiting())
    print(
        f"Nothing was saved as a memory note. {len(offered)} new memory proposals "
        f"({waiting} waiting in all): /memory proposals in a chat shows them to keep or decline."
    )
    client = embeddings_client(settings.llm)
    if client is not None:
        try:
            done = asyncio.run(_vectors(settings, client, dirs))
            print(f"vectors: {done:,} messages embedded ({client.name})")
        except EmbedError as exc:
            print(f"vectors not computed now ({exc}); the daemon computes them in the background")
    return 0


def _one_array(path: Path) -> bool:
    """Whether the file opens with `[{` (after a BOM and blanks): a ChatGPT or Claude
    export read with the default `--format jsonl` was "imported" as one skipped line,
    exit 0, nothing read (s46 newcomer). JSONL's lines are objects; a first line of any
    other array (`[[[...`) is still skipped and named as a line."""
    try:
        with path.open("rb") as stream:
            head = stream.read(4096)
    except OSError:
        return False  # the import itself says what is wrong with reading it
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return text.startswith(b"[") and text[1:].lstrip().startswith(b"{")  # [{"title": ...


async def _imported(settings: Settings, dirs: TenantDirs, fmt: str, path: Path) -> Summary:
    """The file into the tenant's index, through the home's `Database` (roost.db)."""
    db = await open_database(settings.home / "roost.db")
    try:
        indexer = Indexer(db, vault_mask(Vault(NullAudit()).masker), screen=secret_kinds)
        return await _run(indexer, dirs, fmt, path)
    finally:
        await db.aclose()


async def _vectors(settings: Settings, client: EmbeddingsClient, dirs: TenantDirs) -> int:
    db = await open_database(settings.home / "roost.db")
    backfill = Backfill(client, Indexer(db), settings.llm.embeddings.batch)
    try:
        if not sys.stderr.isatty():
            return await backfill.fill(dirs)
        columns = (TextColumn("embedding"), TextColumn("{task.completed:,} messages"))
        with Progress(*columns, transient=True) as bar:
            task = bar.add_task("vectors", total=None)
            return await backfill.fill(dirs, lambda n: bar.update(task, completed=n))
    finally:
        await backfill.aclose()
        await client.aclose()
        await db.aclose()


def _topics(dirs: TenantDirs) -> list[Topic]:
    """The tenant's topics (read only: the caps play no part in reading)."""
    return MemoryStore(0, 0).topics(dirs)


async def _run(indexer: Indexer, dirs: TenantDirs, fmt: str, path: Path) -> Summary:
    size = path.stat().st_size  # noqa: ASYNC240 (a stat; the import reads the file on the loop)
    with path.open("rb") as stream:
        if not sys.stderr.isatty():
            return await import_stream(indexer, dirs, fmt, stream)
        columns = (
            TextColumn("importing"),
            BarColumn(),
            DownloadColumn(),
            TextColumn("{task.fields[messages]:,} messages"),
            TimeRemainingColumn(),
        )
        with Progress(*columns, transient=True) as bar:
            task = bar.add_task("import", total=size, messages=0)
            return await import_stream(
                indexer,
                dirs,
                fmt,
                stream,
                progress=lambda done: bar.update(task, completed=done),
                on_batch=lambda s: bar.update(task, messages=s.messages),
            )
