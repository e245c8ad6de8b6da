"""The memo as a turn sees it: an unchanged prompt is the very same object, and a change
renders only the block it reaches (the others are the objects of the previous prompt)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.core.dirwatch import DirWatch
from bridge.prompt.source import Rendered
from tests.prompt.test_memo_differential import made

pytestmark = pytest.mark.skipif(
    DirWatch.open((os.getcwd(),)) is None, reason="no inotify on a local file system here"
)


async def test_only_the_block_a_change_reaches_is_rendered_again(tmp_path: Path) -> None:
    w = await made(tmp_path, 0).open()
    try:
        (w.dirs.skills / "s1.md").write_text("---\nname: s1\ndescription: one\n---\nbody\n")
        w.dirs.steering.write_text("Mine. Also @mine/r1.md\n")
        (w.dirs.root / "mine" / "r1.md").write_text("first\n")
        prompt = w.watched.prompt

        async def render() -> Rendered:
            await prompt.prepare("alice")  # what a turn's `PromptRows` does
            return prompt.render(w.dirs, "web", "c1", "m1", w.now)

        first = await render()
        assert await render() is first  # nothing changed: the same prompt, nothing rendered
        await w.db.execute(  # what every turn writes to roost.db: not an input of the prompt
            "INSERT INTO session_messages (tenant, channel, chat, turn, role, content, at) "
            "VALUES ('alice', 'web', 'c1', 1, 'user', 'hi', 0)"
        )
        await w.stores.grades.all("bob")  # another tenant's rows read: nothing of alice's
        await w.stores.grades.apply("bob", "s1", "approval", w.now)
        assert await render() is first
        (w.dirs.root / "mine" / "r1.md").write_text("second\n")
        second = await render()
        assert "second" in second.text
        changed = [
            b.name
            for a, b in zip(first.each, second.each, strict=True)
            if b is not None and a is not b
        ]
        assert changed == ["base"]
        await w.stores.grades.apply("alice", "s1", "rejection", w.now)
        third = await render()
        changed = [
            b.name
            for a, b in zip(second.each, third.each, strict=True)
            if b is not None and a is not b
        ]
        assert changed == ["skills"]
    finally:
        await w.close()


async def test_a_prompt_made_again_equal_is_then_known_by_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file written again with the same words makes an equal snapshot anew: the same
    prompt text, compared field by field once, and from the next turn on known by the
    snapshot object alone (no field compared every turn)."""
    from bridge.prompt.snapshot import Snapshot

    w = await made(tmp_path, 0).open()
    try:
        w.dirs.steering.write_text("Mine. Also @mine/r1.md\n")
        (w.dirs.root / "mine" / "r1.md").write_text("first\n")
        prompt = w.watched.prompt

        async def render() -> Rendered:
            await prompt.prepare("alice")
            return prompt.render(w.dirs, "web", "c1", "m1", w.now)

        first = await render()
        compared: list[object] = []
        equal = Snapshot.__eq__

        def counted(a: Snapshot, b: object) -> bool:
            compared.append(b)
            return equal(a, b)

        monkeypatch.setattr(Snapshot, "__eq__", counted)
        (w.dirs.root / "mine" / "r1.md").write_text("first\n")  # the same words again
        again = await render()
        assert again.text == first.text
        assert again.each == first.each
        assert len(compared) == 1  # the new snapshot against the kept one, once
        for _ in range(3):
            assert await render() is again
        assert len(compared) == 1
    finally:
        await w.close()
