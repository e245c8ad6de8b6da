"""`roost backup DEST` refuses a DEST inside the home: it would copy itself (and every
earlier backup there) into the copy, a new level each run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.app.backup import BackupError, backup


def _home(root: Path) -> Path:
    home = root / "home"
    (home / "tenants" / "alice").mkdir(parents=True)
    (home / "web-token").write_text("t")
    return home


@pytest.mark.parametrize("inside", ["sub", "tenants/alice/backup", "."])
def test_a_destination_inside_the_home_is_refused(tmp_path: Path, inside: str) -> None:
    home = _home(tmp_path)
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    with pytest.raises(BackupError, match="inside the home"):
        backup(home, home / inside)
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before  # nothing made


def test_a_link_that_leads_into_the_home_is_refused(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (tmp_path / "elsewhere").symlink_to(home / "tenants")
    with pytest.raises(BackupError, match="inside the home"):
        backup(home, tmp_path / "elsewhere" / "copy")
    assert not (home / "tenants" / "copy").exists()


def test_a_destination_beside_the_home_is_taken(tmp_path: Path) -> None:
    home = _home(tmp_path)
    result = backup(home, tmp_path / "home-backup")
    assert (tmp_path / "home-backup" / "web-token").read_text() == "t"
    assert result.files == 1  # the token (the manifest lists files, it is not one of them)
