"""The per-tenant disk quota (`[quota] tenant_bytes`, `bridge/core/quota.py`).

The measure itself (walked once, kept current by what roost writes, measured
again after a tool ran or after its time), then every way a file arrives:
a web upload (507, declared or streamed), a Telegram file (not fetched, or
stopped while streaming; the reply says the storage is full), `/export`
(abandoned, no file left). Another tenant is never affected. Real files in
a temporary home; Telegram through the fake Bot API.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.export_chat import KEEP
from bridge.core import quota as quota_module
from bridge.core.agent import AgentResult, ToolRun
from bridge.core.quota import ENTRY_BYTES, UNLIMITED, QuotaExceeded, QuotaObserver, TenantQuota
from bridge.types.audit_sink import TurnEvents
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext
from tests.conftest import Clock
from tests.senses.conftest import BOB, senses_running
from tests.spine.test_web_upload import BOB as BOB_WEB
from tests.spine.test_web_upload import TOKEN, Served, files_in, served
from tests.telegram.conftest import ALICE

KIB = 1024


async def upload_chunked(s: Served, data: bytes, name: str) -> tuple[int, dict[str, Any]]:
    """A multipart upload sent chunked: no Content-Length, the size is known only at the end."""
    boundary = "quota-test-boundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()

    async def body() -> AsyncIterator[bytes]:
        yield head
        for start in range(0, len(data), 4096):
            yield data[start : start + 4096]
        yield f"\r\n--{boundary}--\r\n".encode()

    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Content-Type": f"multipart/form-data; boundary={boundary}",
    }
    async with s.http.post("/api/upload", data=body(), headers=headers) as r:
        return r.status, dict(await r.json())


def put(dirs: TenantDirs, rel: str, size: int) -> Path:
    path = dirs.workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))  # incompressible: a ZIP of it is as large
    return path


def test_the_measure_is_walked_once_and_kept_current(tmp_path: Path) -> None:
    clock = Clock(1000.0)
    quota = TenantQuota(tmp_path, 100 * KIB, clock=clock, ttl_s=300)
    dirs = quota.dirs("alice").ensure()
    put(dirs, "a.bin", 10 * KIB)
    put(dirs, "deep/er/b.bin", 5 * KIB)
    os.link(dirs.workspace / "a.bin", dirs.workspace / "a-again.bin")  # one inode: once
    os.symlink("/usr", dirs.workspace / "usr")  # never followed
    dirs.out.mkdir()
    (dirs.out / "old.zip").write_bytes(b"z" * KIB)  # exports count too
    (dirs.root / "USER.md").write_text("x" * 50 * KIB)  # not the workspace: does not
    # 10 + 5 KiB, old.zip and the folders outputs/ (every person has it), deep/, deep/er/
    # and the link a block each
    assert quota.usage(dirs) == 35 * KIB and quota.walks == 1
    assert quota.remaining(dirs) == 65 * KIB and quota.walks == 1  # kept

    quota.take(dirs, 4 * KIB)  # roost's own writes are added as they happen
    quota.charge(dirs, -KIB)
    assert quota.usage(dirs) == 38 * KIB and quota.walks == 1
    with pytest.raises(QuotaExceeded) as full:
        quota.take(dirs, 63 * KIB)
    assert "[quota] tenant_bytes" in str(full.value)
    assert quota.usage(dirs) == 38 * KIB  # a refused take counts nothing

    put(dirs, "tool-wrote.bin", 30 * KIB)  # unannounced: seen after the time
    assert quota.usage(dirs) == 38 * KIB
    clock.advance(301)
    assert quota.usage(dirs) == 65 * KIB and quota.walks == 2
    quota.invalidate("alice")  # announced: at once
    (dirs.workspace / "tool-wrote.bin").unlink()
    assert quota.usage(dirs) == 35 * KIB and quota.walks == 3

    other = quota.dirs("bob").ensure()
    assert quota.usage(other) == KIB * 4  # per tenant: only its outputs/ folder
    quota.set_limit(0)
    assert quota.remaining(dirs) == UNLIMITED
    quota.check(dirs, 10**15)  # unlimited: nothing refused


async def test_on_the_event_loop_a_due_walk_runs_on_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`room` (a tool call's write budget) and `fits` (an attachment's check) walk off the
    loop: a tenant of 100,000 files took 0.4 s to walk, and the loop serves everyone."""
    clock = Clock(1000.0)
    quota = TenantQuota(tmp_path, 100 * KIB, clock=clock, ttl_s=300)
    dirs = quota.dirs("alice").ensure()
    put(dirs, "a.bin", 10 * KIB)
    walked_on: list[str] = []
    measure = quota_module.measure

    def watched(paths: tuple[Path, ...]) -> int:
        walked_on.append(threading.current_thread().name)
        return measure(paths)

    monkeypatch.setattr(quota_module, "measure", watched)
    assert await quota.room(dirs) == 86 * KIB  # a.bin and the outputs/ folder
    assert len(walked_on) == 1 and walked_on[0] != threading.main_thread().name
    assert await quota.room(dirs) == 86 * KIB and len(walked_on) == 1  # kept: no thread
    await quota.fits(dirs, 86 * KIB)
    with pytest.raises(QuotaExceeded):
        await quota.fits(dirs, 86 * KIB + 1)
    assert len(walked_on) == 1
    quota.invalidate("alice")
    with pytest.raises(QuotaExceeded):
        await quota.fits(dirs, 95 * KIB)
    assert len(walked_on) == 2 and walked_on[1] != threading.main_thread().name
    quota.set_limit(0)
    assert await quota.room(dirs) == UNLIMITED


async def test_a_turn_whose_tools_ran_measures_again(tmp_path: Path) -> None:
    quota = TenantQuota(tmp_path, 100 * KIB)
    dirs = quota.dirs("alice").ensure()
    quota.usage(dirs)
    turn = TurnContext(dirs, Inbound("web", "local", "c", "hi", "m1"), lambda: 0.0)
    observer = QuotaObserver(quota)
    await observer.after_turn(turn, AgentResult("no tools", 1), TurnEvents())
    assert quota.walks == 1
    ran = AgentResult("wrote", 2, tool_runs=[ToolRun("me.write", True, 3)])
    await observer.after_turn(turn, ran, TurnEvents())
    quota.usage(dirs)
    assert quota.walks == 2


async def test_a_web_upload_over_the_quota_is_refused_with_507(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOST_QUOTA__TENANT_BYTES", str(100 * KIB))
    async with served(home, monkeypatch, factory=True) as s:
        put(s.roost.tenant_dirs("local"), "big.bin", 90 * KIB)
        status, body = await s.upload(b"a" * 20 * KIB, "notes.txt", "text/plain")
        assert status == 507 and "[quota] tenant_bytes" in body["error"], body
        assert "90.0 KiB" not in body["error"] and "of 100 KiB used" in body["error"]
        # the same without a declared length: stopped while it streams
        status, body = await upload_chunked(s, b"b" * 20 * KIB, "more.txt")
        assert status == 507 and "[quota] tenant_bytes" in body["error"], body
        assert files_in(s.inbox()) == []  # nothing half-written
        status, _ = await s.upload(b"c" * 5 * KIB, "small.txt", "text/plain")
        assert status == 200  # what fits still goes
        status, _ = await s.upload(b"d" * 20 * KIB, "bob.txt", "text/plain", token=BOB_WEB)
        assert status == 200  # another tenant has its own quota


async def test_a_telegram_file_over_the_quota_is_not_kept_and_said(home: Path) -> None:
    async with senses_running(home, quota={"tenant_bytes": 100 * KIB}) as run:
        put(run.roost.tenant_dirs("alice"), "big.bin", 90 * KIB)
        run.fake.files.push_document(ALICE, b"x" * 20 * KIB, "notes.txt", "text/plain")
        reply = await run.wait_text(ALICE, "notes.txt was not saved")
        assert "[quota] tenant_bytes" in reply and "Remove files" in reply
        assert run.fake.calls_of("getFile") == []  # its declared size did not fit
        # Telegram declared too little: stopped while it streamed, nothing kept
        run.fake.files.push_document(ALICE, b"y" * 20 * KIB, "liar.txt", "text/plain", claimed=10)
        await run.wait_text(ALICE, "liar.txt was not saved")
        assert list(run.roost.tenant_dirs("alice").inbox.iterdir()) == []
        run.fake.files.push_document(BOB, b"z" * 20 * KIB, "bob.txt", "text/plain")
        await run.wait_text(BOB, "echo:")  # another tenant: its own quota, read


async def test_an_export_that_does_not_fit_leaves_nothing(home: Path) -> None:
    async with senses_running(home, quota={"tenant_bytes": 100 * KIB}) as run:
        put(run.roost.tenant_dirs("alice"), "photos.bin", 60 * KIB)
        run.fake.push_text(ALICE, "/export")
        reply = await run.wait_text(ALICE, "Not exported")
        assert "[quota] tenant_bytes" in reply and "roost export" in reply
        out = run.roost.tenant_dirs("alice").out
        assert not out.exists() or list(out.iterdir()) == []  # no ZIP, no temp file
        (run.roost.tenant_dirs("alice").workspace / "photos.bin").unlink()
        run.roost.quota.invalidate("alice")
        run.fake.push_text(ALICE, "/export")
        await run.wait_text(ALICE, "Here is everything roost keeps about you")
        assert len(list(out.glob("roost-export-*.zip"))) == 1 <= KEEP


def test_empty_files_and_folders_count_a_block_each(tmp_path: Path) -> None:
    """A tool once made 17,515 empty files in one call: inodes and blocks of the disk that
    counted nothing. Each file, folder and link counts one block at least."""
    quota = TenantQuota(tmp_path, 100 * KIB)
    dirs = quota.dirs("alice").ensure()
    for i in range(10):
        (dirs.workspace / f"empty{i}").touch()
    (dirs.workspace / "folder").mkdir()
    (dirs.workspace / "small.txt").write_text("x")
    assert quota.usage(dirs) == 13 * ENTRY_BYTES  # and outputs/, every person's
