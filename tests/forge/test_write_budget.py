"""The per-call write budget (issue 21, item 4: one call wrote 192 MiB into its
workspace in 1.5 s). Real sandboxed tools write through every route a tool has
(`open` in text and binary modes, append, `+` modes, `print(file=)`,
`json.dump`, `csv.writer`, `pathlib.write_text/write_bytes`, `f.buffer`,
`writelines`, `truncate` and `seek` past the end), and at most 1,000 new
files and folders a call (one made 17,515 empty ones); over the budget the call
fails with kind `quota`, whatever the tool did with the error, and no file it
was writing stays half-written. A caller may lower the budget per call
(`run(write_bytes=...)`); `[forge] write_bytes_per_call` sets the default.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bridge.app.build import build
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.tenant_dirs import TenantDirs
from forge.protocol.limits import Limits
from forge.runner import SandboxRunner
from forge.write_budget import WriteBudget, WriteQuotaExceeded
from tests.conftest import Clock, ScriptedBackend, web_msg
from tests.forge.helpers import tool

aio = pytest.mark.asyncio(loop_scope="module")
MiB = 1024 * 1024
KiB = 1024


def _names(ws: Path) -> list[str]:
    return [p.name for p in ws.iterdir()]


def _sizes(ws: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in ws.iterdir() if p.is_file()}


async def _quota(runner: SandboxRunner, body: str, ws: Path, budget: int, imports: str = "") -> str:
    res = await runner.run(tool(body, imports=imports), {}, ws, write_bytes=budget)
    assert not res.ok, res.result
    assert res.error_kind == "quota", (res.error_kind, res.error_message)
    return res.error_message


@aio
async def test_the_reported_burst_stops_at_the_default_cap(
    runner: SandboxRunner, workspace: Path
) -> None:
    """12 files of 16 MiB (192 MiB) in one call: the default 64 MiB holds, the four
    finished files stay whole, the fifth is removed, nothing else is there."""
    body = (
        "chunk = b'x' * 2 ** 20\n"
        "for n in range(12):\n"
        "    with open('part%02d.bin' % n, 'wb') as f:\n"
        "        for i in range(16):\n"
        "            f.write(chunk)\n"
        "return 'done'"
    )
    res = await runner.run(tool(body), {}, workspace)
    assert res.error_kind == "quota", res
    assert "64 MiB" in res.error_message and "part04.bin" in res.error_message
    sizes = _sizes(workspace)
    assert sizes == {f"part{n:02d}.bin": 16 * MiB for n in range(4)}, sizes


@aio
@pytest.mark.parametrize(
    ("name", "body", "imports"),
    [
        ("text write", "with open('o.txt', 'w') as f:\n    f.write('y' * 300000)", ""),
        ("binary write", "with open('o.bin', 'wb') as f:\n    f.write(b'y' * 300000)", ""),
        ("append", "with open('o.txt', 'a') as f:\n    f.write('y' * 300000)", ""),
        ("exclusive create", "with open('o.bin', 'xb') as f:\n    f.write(b'y' * 300000)", ""),
        ("w+ mode", "with open('o.txt', 'w+') as f:\n    f.write('y' * 300000)", ""),
        (
            "print to a file",
            "with open('o.txt', 'w') as f:\n"
            "    for i in range(3000):\n        print('y' * 99, file=f)",
            "",
        ),
        (
            "json.dump",
            "with open('o.json', 'w') as f:\n    json.dump(['y' * 1000] * 300, f)",
            "import json",
        ),
        (
            "csv.writer",
            "with open('o.csv', 'w', newline='') as f:\n"
            "    w = csv.writer(f)\n    for i in range(3000):\n        w.writerow(['y' * 99])",
            "import csv",
        ),
        (
            "pathlib.write_text",
            "Path('o.txt').write_text('y' * 300000)",
            "from pathlib import Path",
        ),
        (
            "pathlib.write_bytes",
            "Path('o.bin').write_bytes(b'y' * 300000)",
            "from pathlib import Path",
        ),
        (
            "pathlib open",
            "with Path('o.bin').open('wb') as f:\n    f.write(b'y' * 300000)",
            "from pathlib import Path",
        ),
        (
            "the text file's buffer",
            "with open('o.txt', 'w') as f:\n    f.buffer.write(b'y' * 300000)",
            "",
        ),
        (
            "the raw file under the buffer",
            "with open('o.bin', 'wb') as f:\n    f.raw.write(b'y' * 300000)",
            "",
        ),
        (
            "writelines",
            "with open('o.txt', 'w') as f:\n    f.writelines(['y' * 1000] * 300)",
            "",
        ),
        ("truncate past the end", "with open('o.bin', 'wb') as f:\n    f.truncate(300000)", ""),
        (
            "seek past the end",
            "with open('o.bin', 'wb') as f:\n    f.seek(300000)\n    f.write(b'y')",
            "",
        ),
        (
            "many small files",
            "for i in range(40):\n"
            "    with open('s%d.bin' % i, 'wb') as f:\n        f.write(b'y' * 8000)",
            "",
        ),
    ],
)
async def test_every_write_route_is_counted(
    runner: SandboxRunner, workspace: Path, name: str, body: str, imports: str
) -> None:
    msg = await _quota(runner, body + "\nreturn 1", workspace, 256 * KiB, imports)
    assert "256 KiB" in msg, msg
    assert sum(_sizes(workspace).values()) <= 256 * KiB, (name, _sizes(workspace))


@aio
async def test_within_the_budget_everything_is_written(
    runner: SandboxRunner, workspace: Path
) -> None:
    body = (
        "with open('a.txt', 'w') as f:\n    f.write('hello\\n')\n"
        "with open('a.txt', 'a') as f:\n    print('more', file=f)\n"
        "with open('a.txt', 'r+') as f:\n    f.write('J')\n"
        "with open('a.txt') as f:\n    return f.read()"
    )
    res = await runner.run(tool(body), {}, workspace, write_bytes=64)
    assert res.ok and res.result == "Jello\nmore\n", res


@aio
async def test_rewriting_a_file_costs_nothing_more(runner: SandboxRunner, workspace: Path) -> None:
    """Ten rewrites of one 100 KiB file fit a 128 KiB budget: only growth counts."""
    body = (
        "for i in range(10):\n"
        "    with open('state.bin', 'wb') as f:\n        f.write(bytes([i]) * 102400)\n"
        "return 1"
    )
    res = await runner.run(tool(body), {}, workspace, write_bytes=128 * KiB)
    assert res.ok, res
    assert (workspace / "state.bin").read_bytes() == bytes([9]) * 102400


@aio
async def test_catching_the_error_does_not_keep_the_partial_file(
    runner: SandboxRunner, workspace: Path
) -> None:
    body = (
        "try:\n"
        "    with open('big.bin', 'wb') as f:\n"
        "        for i in range(100):\n            f.write(b'y' * 10000)\n"
        "except OSError as e:\n"
        "    with open('note.txt', 'w') as g:\n        g.write('ignored')\n"
        "    return 'carried on: ' + str(e)\n"
        "return 1"
    )
    msg = await _quota(runner, body, workspace, 100 * KiB)
    assert "big.bin" in msg
    assert _sizes(workspace) == {}, _sizes(workspace)  # note.txt was opened after: removed too


@aio
async def test_an_appended_file_is_cut_back_and_a_finished_one_stays(
    runner: SandboxRunner, workspace: Path
) -> None:
    (workspace / "log.txt").write_text("old line\n")
    body = (
        "with open('done.txt', 'w') as f:\n    f.write('complete')\n"
        "with open('log.txt', 'a') as f:\n"
        "    for i in range(1000):\n        f.write('new line ' * 20)\n"
        "return 1"
    )
    await _quota(runner, body, workspace, 64 * KiB)
    assert (workspace / "log.txt").read_text() == "old line\n"
    assert (workspace / "done.txt").read_text() == "complete"


@aio
async def test_a_rewritten_existing_file_is_removed_not_left_half(
    runner: SandboxRunner, workspace: Path
) -> None:
    (workspace / "report.csv").write_text("a,b\n1,2\n")
    body = "with open('report.csv', 'w') as f:\n    f.write('z' * 200000)\nreturn 1"
    await _quota(runner, body, workspace, 50 * KiB)
    assert not (workspace / "report.csv").exists()


@aio
async def test_a_zero_budget_refuses_every_write(runner: SandboxRunner, workspace: Path) -> None:
    body = "with open('x.txt', 'w') as f:\n    f.write('a')\nreturn 1"
    await _quota(runner, body, workspace, 0)
    assert _sizes(workspace) == {}


@aio
async def test_the_caller_may_lower_but_never_raise_the_budget(
    workspace: Path,
) -> None:
    runner = SandboxRunner(limits=Limits(write_bytes=100 * KiB))
    await runner.start()
    try:
        body = "with open('x.bin', 'wb') as f:\n    f.write(b'a' * 150000)\nreturn 1"
        res = await runner.run(tool(body), {}, workspace, write_bytes=10 * MiB)
        assert res.error_kind == "quota" and "100 KiB" in res.error_message, res
        small = "with open('y.bin', 'wb') as f:\n    f.write(b'a' * 50000)\nreturn 1"
        assert (await runner.run(tool(small), {}, workspace)).ok
        other = small.replace("y.bin", "z.bin")
        res = await runner.run(tool(other), {}, workspace, write_bytes=10 * KiB)
        assert res.error_kind == "quota", res
    finally:
        await runner.aclose()


@aio
async def test_the_per_file_cap_stays_as_backstop(runner: SandboxRunner, workspace: Path) -> None:
    """RLIMIT_FSIZE (16 MiB a file) holds under the 64 MiB budget: kind quota,
    and the file that hit it is removed."""
    body = (
        "with open('big.bin', 'wb') as f:\n    for i in range(20):\n        f.write(b'x' * 2 ** 20)"
    )
    msg = await _quota(runner, body + "\nreturn 1", workspace, 64 * MiB)
    assert "File too large" in msg and "16 MiB" in msg
    assert not (workspace / "big.bin").exists()


def test_budget_counts_growth_beyond_the_high_water_mark(tmp_path: Path) -> None:
    f = tmp_path / "a"
    f.write_bytes(b"x" * 100)
    budget = WriteBudget(50)
    rec = budget.opened("a", os.stat(f), replaced=False, append=True)
    budget.grow(rec, 100)  # within what the file already held
    budget.grow(rec, 140)
    assert budget.left == 10
    budget.grow(rec, 120)  # lower than the mark: free
    with pytest.raises(WriteQuotaExceeded):
        budget.grow(rec, 151)
    assert rec.partial and budget.exceeded
    with pytest.raises(WriteQuotaExceeded):
        budget.grow(rec, 100)  # after the stop every write to a partial file is refused


async def test_the_configured_cap_reaches_the_daemon_runner(
    home: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[forge] write_bytes_per_call` (here through its environment spelling)."""
    assert load_settings().forge.write_bytes_per_call == 64 * MiB
    monkeypatch.setenv("ROOST_FORGE__WRITE_BYTES_PER_CALL", "12345")
    settings = load_settings()
    made = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    try:
        assert made.runner.limits.write_bytes == 12345
    finally:
        await made.aclose()


async def test_a_call_writes_only_what_the_tenant_quota_leaves(
    home: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[quota] tenant_bytes` reaches every tool call: with 40 KiB of a 64 KiB quota
    used, a draft that writes 32 KiB fails with kind `quota` (the per-call cap of
    64 MiB alone would let it through), and one that writes 16 KiB succeeds."""
    monkeypatch.setenv("ROOST_QUOTA__TENANT_BYTES", str(64 * KiB))
    workspace = TenantDirs.of(home, "local").workspace
    workspace.mkdir(parents=True)
    (workspace / "kept.bin").write_bytes(b"k" * 40 * KiB)
    made = await build(load_settings(), backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    try:
        backend = made.backend
        assert isinstance(backend, ScriptedBackend)
        for name, size in (("big", 32), ("small", 16)):
            body = f"open('{name}.bin', 'wb').write(b'x' * {size * KiB})\nreturn 'wrote'"
            args = {"name": name, "description": "d", "source": tool(body)}
            backend.steps.extend(
                [[("forge_create", json.dumps(args))], [(f"draft__{name}", "{}")], "done"]
            )
        await made.core.handle(web_msg("write big", 1))
        await made.core.handle(web_msg("write small", 2))
        big, small = (str(backend.requests[n].messages[-1].content) for n in (2, 5))
        assert "draft me.big failed (quota)" in big, big
        assert "wrote" in small, small
        assert not (workspace / "big.bin").exists()
        assert (workspace / "small.bin").stat().st_size == 16 * KiB
    finally:
        await made.aclose()


@aio
@pytest.mark.parametrize(
    ("body", "imports", "made"),
    [
        ("for i in range(1500):\n    open('f%d' % i, 'w').close()\nreturn 1", "", "f"),
        ("for i in range(1500):\n    os.mkdir('d%d' % i)\nreturn 1", "import os", "d"),
        (
            "for i in range(1500):\n    pathlib.Path('p%d' % i).touch()\nreturn 1",
            "import pathlib",
            "p",
        ),
    ],
    ids=["open", "mkdir", "touch"],
)
async def test_one_call_makes_at_most_a_thousand_files_or_folders(
    runner: SandboxRunner, workspace: Path, body: str, imports: str, made: str
) -> None:
    """One call made 17,515 empty files in its 5 s (each an inode and a block of the disk,
    none of them bytes of the write count): past MAX_NEW_ENTRIES the call ends, kind quota."""
    message = await _quota(runner, body, workspace, 64 * MiB, imports)
    assert "more than 1000 files or folders in one call" in message
    kept = [name for name in _names(workspace) if name.startswith(made)]
    assert len(kept) == 1000 and f"{made}1000" not in kept


@aio
async def test_an_exclusive_open_of_an_existing_file_still_fails(
    runner: SandboxRunner, workspace: Path
) -> None:
    (workspace / "there.txt").write_text("old")
    body = (
        "try:\n    open('there.txt', 'x')\nexcept FileExistsError:\n    return 'refused'\n"
        "return 'opened'"
    )
    res = await runner.run(tool(body), {}, workspace)
    assert res.ok and res.result == "refused", res
    assert (workspace / "there.txt").read_text() == "old"
