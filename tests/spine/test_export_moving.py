"""An export while the person's tools move their folders or delete their files.

`file_tree.walk` ends with `TreeChanged` when a folder is moved while it is inside
it; the export was a traceback (`roost export`) or "Something went wrong" (/export).
Now the ZIP is begun again (`file_tree.until_still`, `TRIES` in all) and holds the
tree as it stands; when folders keep moving it stops with a sentence and writes
nothing. A file removed after it was listed is left out, not an error.
"""

from __future__ import annotations

import argparse
import zipfile
from pathlib import Path

import pytest

import bridge.app.export as export_mod
from bridge.app.database import open_database
from bridge.app.export import Exported, write_export
from bridge.cli.export import run_export
from bridge.core.config import Settings
from bridge.types import file_tree
from tests.senses.conftest import senses_running
from tests.spine.test_backup_hostile import _inner, _moving
from tests.telegram.conftest import ALICE

WORKSPACE = "tenants/alice/global/workspace"


async def _export(home: Path, out: Path) -> Exported:
    db = await open_database(home / "roost.db")
    try:
        return await write_export(home, db, "alice", out, "2026-12-06")
    finally:
        await db.aclose()


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _files(out: Path) -> list[str]:
    with zipfile.ZipFile(out) as zf:
        return sorted(n for n in zf.namelist() if n.startswith("files/"))


async def test_a_folder_moved_during_the_export_is_exported_where_it_went(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, out = tmp_path / "home", tmp_path / "alice.zip"
    _inner(home / WORKSPACE)
    walks = _moving(monkeypatch, export_mod, home / WORKSPACE, times=1)
    done = await _export(home, out)
    assert walks[0] == 3  # the files twice (once moved under it), then the web commands
    assert _files(out) == ["files/workspace/b/inner/in.txt"]  # once, where it is now
    assert done.files == 1
    assert _names(tmp_path) == ["alice.zip", "home"]  # no .tmp


async def test_folders_that_keep_moving_stop_the_export_and_write_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, out = tmp_path / "home", tmp_path / "alice.zip"
    _inner(home / WORKSPACE)
    _moving(monkeypatch, export_mod, home / WORKSPACE, times=file_tree.TRIES)
    with pytest.raises(file_tree.TreeChanged):
        await _export(home, out)
    assert _names(tmp_path) == ["home"]


def test_the_command_says_so_with_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home, out = tmp_path / "home", tmp_path / "alice.zip"
    _inner(home / WORKSPACE)
    _moving(monkeypatch, export_mod, home / WORKSPACE, times=file_tree.TRIES)
    code = run_export(argparse.Namespace(tenant="alice", out=out), Settings(home=home))
    err = capsys.readouterr().err
    assert code == 1, err
    assert "roost export: folders of tenant alice kept moving while they were read (3 tries" in err
    assert not out.exists()


async def test_a_file_removed_after_it_was_listed_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, out = tmp_path / "home", tmp_path / "alice.zip"
    (home / WORKSPACE).mkdir(parents=True)
    for name in ("a.txt", "b.txt", "c.txt"):
        (home / WORKSPACE / name).write_text(name)
    real = export_mod._tenant_files

    def listed_then_removed(dirs: object) -> object:
        for entry in real(dirs):  # type: ignore[arg-type]
            if entry.name == "b.txt":
                (home / WORKSPACE / "b.txt").unlink()  # a tool's cleanup, meanwhile
            yield entry

    monkeypatch.setattr(export_mod, "_tenant_files", listed_then_removed)
    done = await _export(home, out)
    assert _files(out) == ["files/workspace/a.txt", "files/workspace/c.txt"]
    assert done.files == 2


async def test_slash_export_says_so_and_leaves_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with senses_running(home) as run:
        dirs = run.roost.tenant_dirs("alice")
        _inner(dirs.workspace)
        _moving(monkeypatch, export_mod, dirs.workspace, times=file_tree.TRIES)
        run.fake.push_text(ALICE, "/export")
        reply = await run.wait_text(ALICE, "Not exported")
        assert "folders in your workspace kept moving while they were read (3 tries" in reply
        assert "Send /export again" in reply
        assert not dirs.out.exists() or list(dirs.out.iterdir()) == []
        run.fake.push_text(ALICE, "/export")  # still: the ZIP once they stand still
        await run.wait_text(ALICE, "Here is everything roost keeps about you")
