"""`roost backup` while files come and go, `roost restore` of a hostile or changing backup.

Backup: a file the daemon deletes (or replaces by a link) between the listing and its
copy is left out and counted, the copy still ends with its manifest. Restore: the whole
manifest is checked before anything is written (an entry not an object, a bad SHA-256,
size or mode is refused, exit 2), restored files never get group or other bits, and a
file swapped or rewritten in the backup after its check is caught by the hash of the
copy itself: the restore fails and removes what it wrote.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

import bridge.app.backup as backup_mod
from bridge.app.backup import BackupError, BackupResult, backup, restore
from bridge.cli.backup import run_backup, run_restore
from bridge.core.config import Settings
from bridge.types import file_tree

INBOX = Path("tenants/alice/workspace/inbox")


def _home(root: Path) -> Path:
    home = root / "home"
    (home / INBOX).mkdir(parents=True)
    sqlite3.connect(home / "roost.db").close()
    (home / "web-token").write_text("token\n")
    os.chmod(home / "web-token", 0o600)
    for i in range(3):
        (home / INBOX / f"up-{i}.txt").write_text(f"upload {i}\n")
    db = sqlite3.connect(home / "tenants/alice/usage.sqlite")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    return home


def _after_listing(monkeypatch: pytest.MonkeyPatch, home: Path, change: Callable[[], None]) -> None:
    """Run `change` once the home is listed, before any file of it is copied."""
    real = backup_mod.walk_files

    def listed_then_changed(root: Path) -> Iterator[Path]:
        found = list(real(root))
        if root == home:
            change()
        return iter(found)

    monkeypatch.setattr(backup_mod, "walk_files", listed_then_changed)


@pytest.mark.parametrize(
    "gone",
    [
        [str(INBOX / "up-1.txt")],  # an unclaimed upload
        ["tenants/alice/usage.sqlite"],  # copied through SQLite's backup API
        [str(INBOX / "up-0.txt"), str(INBOX / "up-2.txt"), "tenants/alice/usage.sqlite"],
    ],
)
def test_a_file_deleted_after_the_listing_is_counted_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gone: list[str]
) -> None:
    home, dest = _home(tmp_path), tmp_path / "backup"

    def daemon_cleans_up() -> None:
        for rel in gone:
            (home / rel).unlink()

    _after_listing(monkeypatch, home, daemon_cleans_up)
    result = backup(home, dest)
    assert result.vanished == len(gone)
    manifest = json.loads((dest / "MANIFEST.json").read_text())
    for rel in gone:
        assert rel not in manifest["files"] and not (dest / rel).exists()
    assert "roost.db" in manifest["files"] and "web-token" in manifest["files"]
    assert len(manifest["files"]) == 6 - len(gone)
    assert restore(dest, tmp_path / "fresh") == result.files  # a complete, valid backup


def test_a_file_replaced_by_a_link_after_the_listing_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, dest = _home(tmp_path), tmp_path / "backup"
    secret = tmp_path / "operator-secret"
    secret.write_text("PRIVATE KEY\n")

    def swap() -> None:
        up = home / INBOX / "up-0.txt"
        up.unlink()
        up.symlink_to(secret)

    _after_listing(monkeypatch, home, swap)
    result = backup(home, dest)
    assert result.vanished == 1
    assert not (dest / INBOX / "up-0.txt").exists()
    assert all("PRIVATE KEY" not in p.read_text() for p in dest.rglob("*.txt"))


def test_the_command_says_how_many_vanished_and_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fake_backup(home: Path, dest: Path) -> BackupResult:
        return BackupResult(dest, 5, 100, 7, vanished=2)

    monkeypatch.setattr("bridge.cli.backup.backup", fake_backup)
    settings = cast(Settings, argparse.Namespace(home=tmp_path / "home"))
    code = run_backup(argparse.Namespace(dest=tmp_path / "backup"), settings)
    out = capsys.readouterr().out
    assert code == 0
    assert "2 files vanished" in out


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _backup(src: Path, files: dict[str, bytes], entries: dict[str, Any] | None = None) -> Path:
    """A backup at `src` holding `files`, with a manifest whose entries `entries` replace."""
    manifest: dict[str, Any] = {}
    for rel, data in files.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        manifest[rel] = {"sha256": _sha(data), "size": len(data), "mode": "0600"}
    manifest.update(entries or {})
    (src / "MANIFEST.json").write_text(json.dumps({"format": 1, "files": manifest}))
    return src


FILES = {"roost.db": b"", "web-token": b"tok\n", "audit/names.key": b"k" * 32}


def _entry(rel: str, **change: object) -> dict[str, Any]:
    return {rel: {"sha256": _sha(FILES[rel]), "size": len(FILES[rel]), "mode": "0600", **change}}


def test_restored_files_never_get_group_or_other_bits(tmp_path: Path) -> None:
    src = _backup(
        tmp_path / "bk",
        FILES,
        {**_entry("web-token", mode="0777"), **_entry("audit/names.key", mode="0644")},
    )
    home = tmp_path / "home"
    assert restore(src, home) == 3
    for rel in FILES:
        assert (home / rel).stat().st_mode & 0o077 == 0, rel
    assert (home / "audit/names.key").stat().st_mode & 0o777 == 0o600
    assert (home / "web-token").read_bytes() == b"tok\n"


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        (_entry("web-token", mode="rw-r--r--"), "mode of 'web-token'"),
        (_entry("web-token", mode="4777"), "mode of 'web-token'"),
        (_entry("web-token", mode=384), "mode of 'web-token'"),
        (_entry("web-token", mode="0600\n"), "mode of 'web-token'"),
        ({"web-token": "x"}, "entry for 'web-token' is not an object"),
        ({"web-token": ["x"]}, "entry for 'web-token' is not an object"),
        (_entry("web-token", sha256="abc"), "SHA-256 of 'web-token'"),
        (_entry("web-token", sha256=None), "SHA-256 of 'web-token'"),
        (_entry("web-token", size="4"), "size of 'web-token'"),
        (_entry("web-token", size=True), "size of 'web-token'"),
        (_entry("web-token", size=-1), "size of 'web-token'"),
    ],
)
def test_a_bad_manifest_entry_is_refused_before_anything_is_written(
    tmp_path: Path, entries: dict[str, Any], says: str
) -> None:
    # web-token sorts after roost.db and audit/: without the check those were copied first
    src = _backup(tmp_path / "bk", FILES, entries)
    home = tmp_path / "home"
    with pytest.raises(BackupError, match=re.escape(says)):
        restore(src, home)
    assert not home.exists()


@pytest.mark.parametrize("manifest", [[], "x", {"format": 1, "files": []}, {"files": {}}])
def test_a_manifest_that_is_no_object_is_refused(tmp_path: Path, manifest: object) -> None:
    src = tmp_path / "bk"
    src.mkdir()
    (src / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(BackupError):
        restore(src, tmp_path / "home")
    assert not (tmp_path / "home").exists()


def test_the_command_refuses_a_bad_manifest_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _backup(tmp_path / "bk", FILES, _entry("web-token", mode="rw-r--r--"))
    settings = cast(Settings, argparse.Namespace(home=tmp_path / "home"))
    code = run_restore(argparse.Namespace(src=src), settings)
    err = capsys.readouterr().err
    assert code == 2 and "roost restore:" in err and "is not like 0600" in err
    assert not (tmp_path / "home").exists()


def _after_check(monkeypatch: pytest.MonkeyPatch, change: Callable[[], None]) -> None:
    """Run `change` after restore has checked the backup, before it copies a file."""
    real = backup_mod.read_manifest

    def checked_then_changed(src: Path) -> dict[str, backup_mod.Entry]:
        files = real(src)
        change()
        return files

    monkeypatch.setattr(backup_mod, "read_manifest", checked_then_changed)


def test_a_file_swapped_for_a_link_after_the_check_is_not_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _backup(tmp_path / "bk", FILES)
    secret = tmp_path / "operator-secret"
    secret.write_text("OPERATOR PRIVATE KEY\n")

    def swap() -> None:
        (src / "web-token").unlink()
        (src / "web-token").symlink_to(secret)

    _after_check(monkeypatch, swap)
    home = tmp_path / "home"
    with pytest.raises(BackupError, match="web-token in the backup is no longer a regular"):
        restore(src, home)
    assert not home.exists()  # the files copied before it are removed again


def test_a_file_rewritten_after_the_check_fails_the_restore_and_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _backup(tmp_path / "bk", FILES)
    _after_check(monkeypatch, lambda: (src / "web-token").write_bytes(b"evil\n"))
    home = tmp_path / "home"
    with pytest.raises(BackupError, match="web-token changed in the backup") as caught:
        restore(src, home)
    assert "Nothing was restored (the 2 files copied before it removed again" in str(caught.value)
    assert not home.exists()


def test_a_restore_into_an_existing_empty_home_leaves_it_empty_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _backup(tmp_path / "bk", FILES)
    _after_check(monkeypatch, lambda: (src / "roost.db").write_bytes(b"x"))
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(BackupError, match=r"roost\.db changed"):
        restore(src, home)
    assert home.is_dir() and list(home.iterdir()) == []
    monkeypatch.undo()
    (src / "roost.db").write_bytes(b"")
    assert restore(src, home) == 3  # the retry is not refused


def _moving(monkeypatch: pytest.MonkeyPatch, module: object, top: Path, times: int) -> list[int]:
    """The first `times` walks of `module` see a folder moved while they are inside it:
    `top/a/inner` (holding a file) to `top/b/inner`, then back (another parent, so the
    walk's climb out of it finds it moved: `TreeChanged`). Returns the walks' count."""
    real, walks = file_tree.walk, [0]

    def walk(root: Path, **kw: Any) -> Iterator[file_tree.Entry]:
        walks[0] += 1
        for entry in real(root, **kw):
            yield entry
            if walks[0] <= times and entry.name == "in.txt":
                here, there = (
                    (top / "a", top / "b")
                    if (top / "a/inner").exists()
                    else (
                        top / "b",
                        top / "a",
                    )
                )
                (here / "inner").rename(there / "inner")

    monkeypatch.setattr(module, "walk", walk)
    return walks


def _inner(top: Path) -> None:
    (top / "a/inner").mkdir(parents=True)
    (top / "b").mkdir()
    (top / "a/inner/in.txt").write_text("inside\n")


def test_a_folder_moved_during_the_listing_is_listed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It ended `backup` with a `TreeChanged` traceback; now the listing is made again
    and the tree as it stands is copied."""
    home, dest = _home(tmp_path), tmp_path / "backup"
    top = home / "tenants/alice/workspace"
    _inner(top)
    walks = _moving(monkeypatch, backup_mod, top, times=1)
    result = backup(home, dest)
    manifest = json.loads((dest / "MANIFEST.json").read_text())["files"]
    assert "tenants/alice/workspace/b/inner/in.txt" in manifest
    assert (dest / "tenants/alice/workspace/b/inner/in.txt").read_text() == "inside\n"
    assert walks[0] == 3  # the home twice (once moved under it), then the copy
    assert restore(dest, tmp_path / "fresh") == result.files


def test_folders_that_keep_moving_stop_the_backup_with_a_sentence(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, dest = _home(tmp_path), tmp_path / "backup"
    top = home / "tenants/alice/workspace"
    _inner(top)
    _moving(monkeypatch, backup_mod, top, times=file_tree.TRIES)
    with pytest.raises(BackupError, match=r"kept moving while they were listed \(3 times\)"):
        backup(home, dest)
    _moving(monkeypatch, backup_mod, top, times=file_tree.TRIES)  # the command, the same
    settings = cast(Settings, argparse.Namespace(home=home))
    code = run_backup(argparse.Namespace(dest=tmp_path / "backup2"), settings)
    assert code == 2
    assert "roost backup: folders under" in capsys.readouterr().err
