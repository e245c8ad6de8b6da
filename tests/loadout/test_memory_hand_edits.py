"""A memory topic file edited, added or removed by hand reaches the prompt on the next turn.

README invites editing `memory/` by hand. The prompt's memory block is MEMORY.md,
which the store writes after each change of its own; a hand edit of a topic file
(its description, the line the index shows), a topic file copied in, or one
removed, rebuilds it before the next prompt (`SnapshotTaker._memory`), with the
plain cache (a `stat` each turn) and with the daemon's watched one (inotify).
`index_behind` itself is pure: the cases it tells apart.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.app.loadout import Loadout, build_loadout
from bridge.core.config import Settings
from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache
from bridge.loadout.chat_settings import ChatSettings
from bridge.memory.files import index_behind, index_files
from bridge.memory.store import Provenance
from bridge.types.audit_sink import MemoryAudit
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import Clock

INDEX = "# Memory index\n- coffee (user): likes flat white\n"


def later(path: Path, than: Path) -> None:
    """Give `path` a modification time after `than`'s (an edit made later, by a person:
    seconds, not the same clock tick)."""
    when = than.stat().st_mtime_ns + 2_000_000_000
    os.utime(path, ns=(when, when))


def memory_block(lo: Loadout, dirs: TenantDirs, clock: Clock) -> str:
    return lo.prompt.render(dirs, "web", "c1", "m1", clock.now).text


async def hand_edits_reach_the_prompt(lo: Loadout, alice: TenantDirs, clock: Clock) -> None:
    prov = Provenance("person", "web", "c1", "m0")
    await lo.memory.save(
        alice, "coffee", "user", "likes flat white", "Flat white.", prov, clock.now
    )
    await lo.memory.save(alice, "garden", "user", "grows basil", "On the balcony.", prov, clock.now)
    assert "likes flat white" in memory_block(lo, alice, clock)
    index = alice.memory / "MEMORY.md"

    topic = alice.memory / "user_coffee.md"
    topic.write_text(topic.read_text().replace("likes flat white", "prefers green tea now"))
    later(topic, index)
    for _ in range(2):  # the turn that rebuilt the index, and the next (through the cache)
        text = memory_block(lo, alice, clock)
        assert "prefers green tea now" in text and "likes flat white" not in text

    added = alice.memory / "user_bike.md"
    added.write_text("---\nname: bike\ntype: user\ndescription: rides a blue bike\n---\nBlue.\n")
    later(added, index)
    assert "rides a blue bike" in memory_block(lo, alice, clock)

    (alice.memory / "user_garden.md").unlink()
    text = memory_block(lo, alice, clock)
    assert "grows basil" not in text and "rides a blue bike" in text
    assert "grows basil" not in index.read_text()


async def test_hand_edits_of_topic_files_reach_the_next_prompt(
    lo: Loadout, alice: TenantDirs, clock: Clock
) -> None:
    await hand_edits_reach_the_prompt(lo, alice, clock)


async def test_hand_edits_reach_the_next_prompt_through_the_watched_cache(
    settings: Settings, chats: ChatSettings, alice: TenantDirs, clock: Clock
) -> None:
    watch = DirWatch.open((str(settings.home),))
    if watch is None:
        pytest.skip("no inotify on a local file system here")
    lo = build_loadout(settings, chats, MemoryAudit(), files=FileCache(watch=watch))
    await hand_edits_reach_the_prompt(lo, alice, clock)


def behind(index_text: str | None, written: int | None, topics: dict[str, int | None]) -> bool:
    return index_behind(index_files(index_text or ""), written, topics)


def test_the_index_is_behind_only_after_a_hand_edit() -> None:
    written = 1_000_000
    assert not behind(INDEX, written, {"user_coffee.md": written})  # the store's own
    assert not behind(INDEX, written, {"user_coffee.md": written - 5})
    assert behind(INDEX, written, {"user_coffee.md": written + 1})  # edited after
    assert behind(INDEX, written, {"user_coffee.md": written, "user_bike.md": written + 9})
    assert behind(INDEX, written, {})  # its entry's file removed
    assert behind(INDEX, written, {"user_coffee.md": None})
    assert not behind(INDEX, written, {"user_coffee.md": written, "user_old.md": 3})
    assert behind(None, None, {"user_coffee.md": 1})  # no index yet
    assert not behind(None, None, {})
    odd = "# Memory index\n- a line by hand\n- ??? (user): no slug\n"
    assert not behind(odd, written, {})  # lines that name no file are left alone
