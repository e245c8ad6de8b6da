"""Steering: includes, limits, cycles, confinement, caps with notes, re-read on change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.core.filecache import FileCache
from bridge.loadout.steering import (
    SteeringCache,
    operator_confinement,
    resolve,
    tenant_confinement,
)
from bridge.types.tenant_dirs import TenantDirs


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def op(home: Path, cap: int = 45_000) -> str:
    return resolve(home / "STEERING.md", operator_confinement(home), cap, FileCache().read)[0]


def test_includes_relative_to_including_file_each_once_cycles_safe(home: Path) -> None:
    write(home / "STEERING.md", "Top rules. See @docs/a.md and again @docs/a.md.")
    write(home / "docs/a.md", "A rules, see @b.md")
    write(home / "docs/b.md", "B rules, back to @a.md and @../STEERING.md")
    text = op(home)
    assert text.count("A rules") == 1 and text.count("B rules") == 1
    assert text.count("Top rules") == 1
    assert "--- Contents of docs/a.md ---" in text and "--- Contents of docs/b.md ---" in text
    assert text.index("A rules") < text.index("B rules")


def test_cache_asks_the_kind_of_an_include_once_per_version(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree resolved again after one include changed asks whether a path is a file only
    of the changed one; an include replaced by a directory of that name is plain text."""
    files = FileCache()
    cache = SteeringCache(files, 45_000)
    conf = operator_confinement(home)
    write(home / "STEERING.md", "top @a.md @b.md @c.md")
    for name in "abc":
        write(home / f"{name}.md", f"rules {name}")
    assert "rules c" in cache.text(home / "STEERING.md", conf)
    asked: list[str] = []
    isfile = os.path.isfile

    def counted(path: str) -> bool:
        asked.append(os.path.basename(path))
        return isfile(path)

    monkeypatch.setattr(os.path, "isfile", counted)
    write(home / "b.md", "rules b, revised")
    assert "rules b, revised" in cache.text(home / "STEERING.md", conf)
    assert asked == ["b.md"]
    (home / "c.md").unlink()
    (home / "c.md").mkdir()
    text = cache.text(home / "STEERING.md", conf)
    assert "rules c" not in text and "rules a" in text and "rules b, revised" in text


def test_depth_limit_three(home: Path) -> None:
    write(home / "STEERING.md", "L0 @l1.md")
    for i in range(1, 6):
        write(home / f"l{i}.md", f"L{i} text @l{i + 1}.md")
    text = op(home)
    assert "L3 text" in text and "L4 text" not in text
    assert "l4.md not included — more than 3 levels" in text


def test_file_limit_twenty(home: Path) -> None:
    refs = " ".join(f"@f{i}.md" for i in range(30))
    write(home / "STEERING.md", f"many: {refs}")
    for i in range(30):
        write(home / f"f{i}.md", f"file {i} body")
    text = op(home)
    assert "file 18 body" in text and "file 19 body" not in text
    assert "f19.md not included — at most 20 files" in text


def test_missing_and_outside_stay_plain_text(home: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "outside.md", "OUTSIDE SECRET")
    write(home / "STEERING.md", f"See @missing.md, @staticmethod, @{outside} and @../outside.md")
    text = op(home)
    assert "OUTSIDE SECRET" not in text and "@missing.md" in text and "@staticmethod" in text


def test_symlink_escape_is_refused(home: Path, tmp_path: Path) -> None:
    write(tmp_path / "target.md", "ESCAPED")
    home.mkdir(parents=True, exist_ok=True)
    os.symlink(tmp_path / "target.md", home / "link.md")
    write(home / "STEERING.md", "see @link.md")
    assert "ESCAPED" not in op(home)


def test_operator_cannot_include_tenant_files_and_tenant_cannot_reach_out(home: Path) -> None:
    alice = TenantDirs.of(home, "alice").ensure()
    bob = TenantDirs.of(home, "bob").ensure()
    write(bob.user_md, "BOB PROFILE")
    write(alice.vault / "TOKEN", "VAULTVALUE")
    write(home / "shared.md", "SHARED OPERATOR FILE")
    write(home / "web-token", "WEBTOKEN")
    write(home / "STEERING.md", "@tenants/bob/global/USER.md @web-token @shared.md")
    text = op(home)
    assert "BOB PROFILE" not in text and "WEBTOKEN" not in text and "SHARED OPERATOR" in text
    write(alice.steering, "@../../bob/global/USER.md @vault/TOKEN @notes.md @../../../shared.md")
    write(alice.root / "notes.md", "ALICE NOTES")
    got = resolve(alice.steering, tenant_confinement(alice), 45_000, FileCache().read)[0]
    assert "ALICE NOTES" in got
    assert "BOB PROFILE" not in got and "VAULTVALUE" not in got and "SHARED" not in got


def test_cap_cuts_with_a_note_naming_the_file(home: Path) -> None:
    write(home / "STEERING.md", "head @big.md @after.md")
    write(home / "big.md", "\n".join(f"line {i:04d} of the big file" for i in range(400)))
    write(home / "after.md", "AFTER")
    text = op(home, cap=2_000)
    assert len(text) < 2_400
    assert "[steering: big.md cut at" in text and "read the file for the rest" in text
    assert "after.md not included — the steering cap is used up" in text
    assert "AFTER" not in text


def test_cache_rereads_when_a_file_changes_or_appears(home: Path) -> None:
    files = FileCache()
    cache = SteeringCache(files, 45_000)
    conf = operator_confinement(home)
    write(home / "STEERING.md", "top @inc.md")
    assert cache.text(home / "STEERING.md", conf) == "top @inc.md"
    reads = files.reads
    assert cache.text(home / "STEERING.md", conf) == "top @inc.md"
    assert files.reads == reads  # unchanged: stats only
    write(home / "inc.md", "now it exists")
    assert "now it exists" in cache.text(home / "STEERING.md", conf)
    write(home / "inc.md", "edited include")
    assert "edited include" in cache.text(home / "STEERING.md", conf)
    (home / "STEERING.md").unlink()
    assert cache.text(home / "STEERING.md", conf) == ""
