"""Everything the forge writes is private (issue 9, item 8): saved tools, their
metadata, the usage database with its WAL and shared-memory files are 0600, the
directories it creates 0700, whatever the process umask (here a lax 022)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from forge.atomic import write_atomic
from forge.library import ToolLibrary, ToolSpec, sha256_text
from forge.schema import describe_tool

SRC = '''
def run(a: int) -> int:
    """Double a number."""
    return a * 2
'''


@pytest.fixture
def lax_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _modes(root: Path) -> dict[str, int]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return out


def _spec() -> ToolSpec:
    info = describe_tool(SRC)
    return ToolSpec("double", info.description, SRC, info.schema, info.secrets, sha256_text(SRC))


def test_saved_tools_metadata_and_usage_are_private(tmp_path: Path, lax_umask: None) -> None:
    root = tmp_path / "tenants" / "alice" / "global"
    library = ToolLibrary(root / "forge" / "tools", lambda: 1_700_000_000_000)
    library.prepare()
    library.save(_spec())
    conn_open = library.usage._connect()  # hold the database open: -wal and -shm exist
    try:
        library.usage.record("double", True, 1)
        modes = _modes(tmp_path / "tenants")
    finally:
        conn_open.close()
    files = {p: m for p, m in modes.items() if not (tmp_path / "tenants" / p).is_dir()}
    dirs = {p: m for p, m in modes.items() if (tmp_path / "tenants" / p).is_dir()}
    names = {Path(p).name for p in files}
    assert {"me.double.py", "me.double.json", "usage.sqlite", "usage.sqlite-wal"} <= names
    assert all(m == 0o600 for m in files.values()), files
    assert all(m == 0o700 for m in dirs.values()), dirs


def test_prepare_tightens_an_existing_tools_directory(tmp_path: Path, lax_umask: None) -> None:
    tools = tmp_path / "forge" / "tools"
    tools.mkdir(parents=True, mode=0o755)
    os.chmod(tools, 0o755)
    ToolLibrary(tools, lambda: 0).prepare()
    assert stat.S_IMODE(tools.stat().st_mode) == 0o700


def test_atomic_write_default_is_private(tmp_path: Path, lax_umask: None) -> None:
    target = tmp_path / "x.json"
    write_atomic(target, b"{}")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
