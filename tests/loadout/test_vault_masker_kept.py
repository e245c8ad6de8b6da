"""The vault's masker is kept between calls (`Vault.masker`, `FileCache.kept`), and never
stale: a value changed behind the cache's back, through a link whose target lives outside
the vault, through a second hard link, or with no watch at all, is masked on the next call.

Real files in a temporary directory and a real inotify instance where there is one.
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

OLD = "old-secret-0123456789"
NEW = "new-secret-9876543210"


class _NoAudit:
    async def emit(self, event: str, tenant: str | None, details: object) -> None:
        raise AssertionError("the masker audits nothing")

    async def emit_many(self, events: object) -> None:
        raise AssertionError("the masker audits nothing")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    real = Path(os.path.realpath(tmp_path)) / "home"
    (real / "tenants" / "alice" / "global" / "vault").mkdir(parents=True)
    (real.parent / "outside").mkdir()
    return real


@pytest.fixture(params=["watched", "unwatched"])
def cache(request: pytest.FixtureRequest, home: Path) -> Iterator[FileCache]:
    if request.param == "unwatched":
        yield FileCache()
        return
    watch = DirWatch.open((str(home),))
    if watch is None:
        pytest.skip("no inotify on a local file system here")
    yield FileCache(watch=watch)
    watch.close()


def _masks(vault: Vault, dirs: TenantDirs, value: str) -> bool:
    return value not in vault.masker(dirs).mask(f"say {value}")


def test_the_masker_is_kept_while_nothing_changed(home: Path, cache: FileCache) -> None:
    dirs = TenantDirs("alice", home / "tenants" / "alice" / "global")
    (dirs.vault / "TOKEN").write_text(OLD)
    vault = Vault(_NoAudit(), cache)
    first = vault.masker(dirs)
    assert all(vault.masker(dirs) is first for _ in range(3))
    (dirs.vault / "TOKEN").write_text(NEW)
    assert _masks(vault, dirs, NEW) and not _masks(vault, dirs, OLD)


def test_a_value_behind_a_link_is_seen_when_its_target_changes(
    home: Path, cache: FileCache
) -> None:
    dirs = TenantDirs("alice", home / "tenants" / "alice" / "global")
    target = home.parent / "outside" / "token"
    target.write_text(OLD)
    (dirs.vault / "TOKEN").symlink_to(target)
    vault = Vault(_NoAudit(), cache)
    assert _masks(vault, dirs, OLD)
    target.write_text(NEW)  # no event in the vault's directory
    assert _masks(vault, dirs, NEW)


def test_a_value_written_through_another_hard_link_is_seen(home: Path, cache: FileCache) -> None:
    dirs = TenantDirs("alice", home / "tenants" / "alice" / "global")
    (dirs.vault / "TOKEN").write_text(OLD)
    other = home.parent / "outside" / "token"
    os.link(dirs.vault / "TOKEN", other)
    vault = Vault(_NoAudit(), cache)
    assert _masks(vault, dirs, OLD)
    with open(other, "w", encoding="utf-8") as fh:  # in place, reported to `outside/` only
        fh.write(NEW)
    assert _masks(vault, dirs, NEW)


def test_two_tenants_keep_their_own_maskers(home: Path, cache: FileCache) -> None:
    alice = TenantDirs("alice", home / "tenants" / "alice" / "global")
    bob = TenantDirs("bob", home / "tenants" / "bob" / "global")
    bob.vault.mkdir(parents=True)
    (alice.vault / "TOKEN").write_text(OLD)
    (bob.vault / "TOKEN").write_text(NEW)
    vault = Vault(_NoAudit(), cache)
    assert _masks(vault, alice, OLD) and not _masks(vault, alice, NEW)
    assert _masks(vault, bob, NEW) and not _masks(vault, bob, OLD)


def test_a_vault_asked_for_before_its_tenant_existed_is_followed(
    home: Path, cache: FileCache
) -> None:
    dirs = TenantDirs("carol", home / "tenants" / "carol" / "global")
    vault = Vault(_NoAudit(), cache)
    assert not _masks(vault, dirs, OLD)  # asked before the tree exists (a new tenant)
    dirs.ensure()
    assert not _masks(vault, dirs, OLD)
    (dirs.vault / "TOKEN").write_text(OLD)
    assert _masks(vault, dirs, OLD)
    kept = vault.masker(dirs)
    checked = cache.stats
    assert all(vault.masker(dirs) is kept for _ in range(3))
    if cache.moved(()) is not None:  # watched: vouched for from now on, no `stat`
        assert cache.stats == checked
    (dirs.vault / "TOKEN").write_text(NEW)
    assert _masks(vault, dirs, NEW) and not _masks(vault, dirs, OLD)
