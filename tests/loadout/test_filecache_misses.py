"""Missing files and the vault's masker under the inotify watch: no `stat` while only
files beside them are written (a database's log in the home directory), every change
that matters seen at once.

Real files in a temporary directory and a real inotify instance, as in
`test_filecache_watch.py`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache
from bridge.loadout.vault import Vault
from bridge.types.tenant_dirs import TenantDirs

pytestmark = pytest.mark.skipif(
    DirWatch.open((os.getcwd(),)) is None, reason="no inotify on a local file system here"
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    real = Path(os.path.realpath(tmp_path)) / "home"
    (real / "tenants" / "alice" / "global").mkdir(parents=True)
    return real


@pytest.fixture
def watch(root: Path) -> Iterator[DirWatch]:
    opened = DirWatch.open((str(root),))
    assert opened is not None
    yield opened
    opened.close()


def test_entries_generation_moves_only_with_entries(root: Path, watch: DirWatch) -> None:
    d = str(root)
    log = root / "roost.db-wal"
    log.write_text("x")
    first = watch.generations(d)
    assert first is not None
    with open(log, "a") as fh:
        fh.write("more")
    os.chmod(log, 0o600)
    both = watch.generations(d)
    assert both is not None and both[0] != first[0] and both[1] == first[1]
    for change in (
        lambda: (root / "new.md").write_text("n"),
        lambda: os.rename(root / "new.md", root / "renamed.md"),
        lambda: (root / "renamed.md").unlink(),
        lambda: os.chmod(root, 0o755),  # the directory's own attributes
    ):
        before = watch.entries_generation(d)
        change()
        assert watch.entries_generation(d) != before


def test_a_missing_file_costs_no_stat_while_files_beside_it_change(
    root: Path, watch: DirWatch
) -> None:
    cache = FileCache(watch=watch)
    steering, log = root / "STEERING.md", root / "roost.db-wal"
    log.write_text("")
    assert cache.read(steering) is None
    assert cache.stat_key(root / "personas") is None
    checked = cache.stats
    for n in range(5):
        with open(log, "a") as fh:
            fh.write(f"commit {n}\n")
        assert cache.read(steering) is None
        assert cache.stat_key(root / "personas") is None
    assert cache.stats == checked
    tmp = root / ".STEERING.md.tmp"
    tmp.write_text("be brief")
    os.replace(tmp, steering)  # created by a rename: seen at once
    assert cache.read(steering) == "be brief"
    (root / "personas").mkdir()
    assert cache.stat_key(root / "personas") is not None
    steering.unlink()
    assert cache.read(steering) is None
    steering.write_text("again")  # created in place
    assert cache.read(steering) == "again"


def test_a_missing_name_in_an_unwatchable_directory_is_checked_every_time(
    root: Path, watch: DirWatch, tmp_path: Path
) -> None:
    outside = Path(os.path.realpath(tmp_path)) / "outside"
    outside.mkdir()
    cache = FileCache(watch=watch)
    assert cache.read(outside / "a.md") is None
    (outside / "a.md").write_text("seen")
    assert cache.read(outside / "a.md") == "seen"


class _NoAudit:
    async def emit(self, event: str, tenant: str | None, details: object) -> None:
        raise AssertionError("the masker audits nothing")

    async def emit_many(self, events: object) -> None:
        raise AssertionError("the masker audits nothing")


def test_the_vault_masker_costs_no_stat_and_follows_every_change(
    root: Path, watch: DirWatch
) -> None:
    cache = FileCache(watch=watch)
    vault = Vault(_NoAudit(), cache)
    dirs = TenantDirs("alice", root / "tenants" / "alice" / "global")
    secret = "s3cr3t-value-0123456789"
    assert vault.masker(dirs).mask(f"say {secret}") == f"say {secret}"  # no vault yet
    dirs.vault.mkdir()
    (dirs.vault / "TOKEN").write_text(secret)
    masker = vault.masker(dirs)
    assert secret not in masker.mask(f"say {secret}")
    checked = cache.stats
    for _ in range(5):
        assert vault.masker(dirs) is masker
    assert cache.stats == checked  # neither the directory nor its file stat-ed again
    other = "another-secret-9876543210"
    (dirs.vault / "TOKEN").write_text(other)  # changed in place
    assert other not in vault.masker(dirs).mask(other)
    (dirs.vault / "SECOND").write_text(secret)  # added
    both = vault.masker(dirs).mask(f"{secret} {other}")
    assert secret not in both and other not in both
    os.rename(dirs.vault / "SECOND", dirs.vault / "THIRD")  # renamed: still masked
    assert secret not in vault.masker(dirs).mask(secret)
    (dirs.vault / "THIRD").unlink()
    assert vault.masker(dirs).mask(secret) == secret  # removed: no longer a secret
