"""A tenant tree made in part (a first upload from the web page) never stops `roost mcp`.

On a fresh home the person's first action may be a file sent from the page: the
upload makes `workspace/inbox` only. The turn after it, and `roost mcp`, must
still get the whole tree (`TenantDirs.ensure`), and the tools watcher must start
even when its folder is missing.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from mcp import Client

from bridge.mcp.watch import watch_tools
from bridge.types.tenant_dirs import TenantDirs
from tests.mcp.conftest import CSV_SUM, save_tool, stdio_params
from tests.spine.test_web_upload import served
from tests.waits import HANG_S


async def test_mcp_serves_a_tenant_whose_first_action_was_an_upload(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with served(home, monkeypatch, factory=True) as s:  # the channel `roost serve` makes
        status, up = await s.upload(b"hello\n", "a.txt", "text/plain")
        assert status == 200, up
    dirs = TenantDirs.of(home, "local")
    assert (dirs.inbox / f"web-{up['id']}.txt").is_file()

    config = Path(os.environ["ROOST_CONFIG"])
    async with Client(stdio_params(home, config, "local"), mode="legacy") as client:
        assert (await client.list_tools()).tools == []
    for folder in (dirs.memory, dirs.skills, dirs.tools, dirs.vault):
        assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700


def test_ensure_completes_a_tree_someone_else_started(tmp_path: Path) -> None:
    dirs = TenantDirs.of(tmp_path, "t1")
    dirs.inbox.mkdir(parents=True)  # what an upload made, and nothing else
    dirs.ensure()
    for folder in (dirs.root, dirs.memory, dirs.skills, dirs.tools, dirs.vault, dirs.workspace):
        assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700


async def test_the_watcher_makes_a_missing_folder_and_watches_it(tmp_path: Path) -> None:
    dirs = TenantDirs.of(tmp_path, "t1")
    dirs.inbox.mkdir(parents=True)
    changed, stop, ready = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def on_change() -> None:
        changed.set()

    def listing() -> str:
        return ",".join(sorted(p.name for p in dirs.tools.glob("me.*")))

    task = asyncio.create_task(watch_tools(dirs.tools, listing, on_change, stop, ready))
    try:
        await asyncio.wait_for(ready.wait(), HANG_S)
        assert dirs.tools.is_dir() and dirs.tools.stat().st_mode & 0o777 == 0o700
        save_tool(tmp_path, "t1", "csv_sum", CSV_SUM)
        await asyncio.wait_for(changed.wait(), HANG_S)
    finally:
        stop.set()
        await asyncio.wait_for(task, HANG_S)
