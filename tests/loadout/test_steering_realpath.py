"""`steering.real_path` answers exactly what `os.path.realpath` answers (the confinement
of @includes rests on it), over a tree of the shapes that matter: symbolic links
relative and absolute, chained, dangling and looping, `..` through a link, missing
parts, directories, odd names."""

from __future__ import annotations

import os
from pathlib import Path

from bridge.loadout.steering import real_path


def tree(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "home"
    (root / "tenants" / "alice" / "steer").mkdir(parents=True)
    (root / "outside").mkdir()
    (root / "outside" / "secret.md").write_text("s")
    (root / "tenants" / "alice" / "steer" / "r1.md").write_text("r")
    (root / "tenants" / "alice" / "odd name ü\nx.md").write_text("o")
    steer = root / "tenants" / "alice" / "steer"
    (steer / "rel.md").symlink_to("../../../outside/secret.md")
    (steer / "abs.md").symlink_to(root / "outside" / "secret.md")
    (steer / "chain.md").symlink_to("rel.md")
    (steer / "dangling.md").symlink_to("nowhere/x.md")
    (steer / "loop1.md").symlink_to("loop2.md")
    (steer / "loop2.md").symlink_to("loop1.md")
    (steer / "up").symlink_to(root / "outside")
    (steer / "self").symlink_to(".")
    return root


def test_the_same_answer_as_realpath_for_every_shape(tmp_path: Path) -> None:
    root = tree(tmp_path)
    steer = root / "tenants" / "alice" / "steer"
    cases = [
        steer / "r1.md",
        steer / "rel.md",
        steer / "abs.md",
        steer / "chain.md",
        steer / "dangling.md",
        steer / "loop1.md",
        steer / "up" / "secret.md",
        steer / "up" / ".." / "tenants" / "alice" / "steer" / "r1.md",
        steer / "self" / "self" / "r1.md",
        steer / "missing.md",
        steer / "missing" / ".." / "r1.md",
        steer,
        root / "tenants" / "alice" / "odd name ü\nx.md",
    ]
    texts = [str(c) for c in cases] + [
        f"{steer}/./r1.md",
        f"{steer}//r1.md",
        f"{steer}/",
        f"{steer}/up/../r1.md",
        f"{steer}/r1.md/x",
    ]
    for path in texts:
        assert real_path(path) == os.path.realpath(path), path


def test_a_link_changed_is_followed_to_its_new_target(tmp_path: Path) -> None:
    root = tree(tmp_path)
    link = root / "tenants" / "alice" / "steer" / "swap.md"
    link.symlink_to("r1.md")
    assert real_path(str(link)) == str(root / "tenants" / "alice" / "steer" / "r1.md")
    link.unlink()
    link.symlink_to(root / "outside" / "secret.md")
    assert real_path(str(link)) == str(root / "outside" / "secret.md")
