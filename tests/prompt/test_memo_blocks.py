"""The memo as a turn sees it: an unchanged prompt is the very same object, and a change
renders only the block it reaches (the others are the objects of the previous prompt)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.core.dirwatch import DirWatch
from bridge.prompt.source import Rendered
from bridge.skills.grades import SkillGrades
from tests.prompt.test_memo_differential import World

pytestmark = pytest.mark.skipif(
    DirWatch.open((os.getcwd(),)) is None, reason="no inotify on a local file system here"
)


def test_only_the_block_a_change_reaches_is_rendered_again(tmp_path: Path) -> None:
    w = World(Path(os.path.realpath(tmp_path)), 0)
    try:
        (w.dirs.skills / "s1.md").write_text("---\nname: s1\ndescription: one\n---\nbody\n")
        w.dirs.steering.write_text("Mine. Also @mine/r1.md\n")
        (w.dirs.root / "mine" / "r1.md").write_text("first\n")
        prompt = w.watched.prompt

        def render() -> Rendered:
            return prompt.render(w.dirs, "web", "c1", "m1", w.now)

        first = render()
        assert render() is first  # nothing changed: the same prompt, nothing rendered
        w.db.execute(  # what every turn writes to roost.db: not an input of the prompt
            "INSERT INTO session_messages (tenant, channel, chat, turn, role, content, at) "
            "VALUES ('alice', 'web', 'c1', 1, 'user', 'hi', 0)"
        )
        assert render() is first
        (w.dirs.root / "mine" / "r1.md").write_text("second\n")
        second = render()
        assert "second" in second.text
        changed = [
            b.name
            for a, b in zip(first.each, second.each, strict=True)
            if b is not None and a is not b
        ]
        assert changed == ["base"]
        SkillGrades(w.db).apply("alice", "s1", "rejection", w.now)
        third = render()
        changed = [
            b.name
            for a, b in zip(second.each, third.each, strict=True)
            if b is not None and a is not b
        ]
        assert changed == ["skills"]
    finally:
        w.close()
