"""A save about a subject another topic holds under another name supersedes it; archived
topics do not count against the memory cap. Through the real core (`build`), and the
store directly for the subject keys.
"""

from __future__ import annotations

import json
from pathlib import Path

from bridge.app.build import build
from bridge.core.config import Settings
from bridge.memory.files import INDEX_NAME
from bridge.memory.store import MemoryFull, MemoryStore, Provenance
from bridge.types.audit_sink import MemoryAudit
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import Clock, ScriptedBackend, web_msg

DAY = 86_400.0
PROV = Provenance("model", "web", "c1", "m1")


def save(name: str, type_: str, description: str, content: str) -> tuple[str, str]:
    args = {"name": name, "type": type_, "description": description, "content": content}
    return ("memory_save", json.dumps(args))


async def test_a_fact_under_another_name_supersedes_the_old_topic(
    settings: Settings, clock: Clock
) -> None:
    audit = MemoryAudit()
    backend = ScriptedBackend(
        [save("home town", "user", "lives in Leipzig", "Lives in Leipzig since 2019.")],
        "ok",
        [save("where I live", "user", "moved to Hamburg in May", "Moved to Hamburg, May 2027.")],
        "ok",
        [save("answer language", "feedback", "always answer in German", "Deutsch bitte.")],
        "ok",
        [save("reply language", "feedback", "answer in English from now on", "English.")],
        "ok",
    )
    roost = await build(settings, backend=backend, audit=audit, clock=clock)
    try:
        await roost.core.handle(web_msg("I live in Leipzig", 1), None)
        clock.now += DAY
        await roost.core.handle(web_msg("I moved to Hamburg", 2), None)
        dirs = roost.tenant_dirs("local")
        index = (dirs.memory / INDEX_NAME).read_text()
        assert "moved to Hamburg" in index and "Leipzig" not in index
        assert not (dirs.memory / "user_home-town.md").exists()
        shown = await roost.core.handle(web_msg("/memory show where I live --history", 3), None)
        assert "Earlier versions (1" in shown.text
        assert "Lives in Leipzig since 2019." in shown.text and "message m1" in shown.text
        superseded = [d for e, _, d in audit.events if e == "memory.superseded"]
        assert [d["name"] for d in superseded] == ["where I live"]
        assert "Leipzig" not in json.dumps(superseded)

        await roost.core.handle(web_msg("answer in German", 4), None)
        await roost.core.handle(web_msg("no, English", 5), None)
        index = (dirs.memory / INDEX_NAME).read_text()
        assert "answer in English" in index and "German" not in index

        undone = await roost.core.handle(web_msg("/memory undo", 6), None)
        assert "Undid" in undone.text
        index = (dirs.memory / INDEX_NAME).read_text()
        assert "always answer in German" in index and "answer in English" not in index
    finally:
        await roost.aclose()


def test_different_subjects_and_types_are_kept_side_by_side(tmp_path: Path) -> None:
    store = MemoryStore(
        2000, 2000, instruction_subject=lambda d: "language" if "German" in d else ""
    )
    dirs = TenantDirs.of(tmp_path, "t").ensure()
    store.save(dirs, "home", "user", "lives in Leipzig", "x", PROV, 0)
    store.save(dirs, "job", "user", "works as a nurse", "x", PROV, 1)
    store.save(dirs, "trip", "project", "moving to Hamburg next year", "x", PROV, 2)
    store.save(dirs, "tea", "user", "drinks green tea", "x", PROV, 3)
    store.save(dirs, "lang", "feedback", "answer in German", "x", PROV, 4)
    assert sorted(t.name for t in store.topics(dirs)) == ["home", "job", "lang", "tea", "trip"]
    result = store.save(dirs, "city", "user", "moved to Hamburg", "x", PROV, 5)
    assert result.superseded is not None and result.superseded.name == "home"
    assert not result.created
    assert sorted(t.name for t in store.topics(dirs)) == ["city", "job", "lang", "tea", "trip"]


def test_archived_topics_do_not_count_against_the_cap(tmp_path: Path) -> None:
    now = [1.7e9]
    store = MemoryStore(150, 2000, archive_after_days=90, clock=lambda: now[0])
    dirs = TenantDirs.of(tmp_path, "t").ensure()
    store.save(
        dirs, "sailing", "project", "sails a Laser dinghy on the Alster " * 2, "x", PROV, now[0]
    )
    now[0] += 100 * DAY
    assert store.used(dirs) == 0  # archived: not in the index
    store.save(
        dirs, "tea", "project", "drinks green tea, no sugar, every morning " * 2, "x", PROV, now[0]
    )
    assert sorted(t.name for t in store.topics(dirs)) == ["sailing", "tea"]
    try:
        store.save(
            dirs, "coffee", "project", "no coffee after noon, ever, really " * 3, "x", PROV, now[0]
        )
    except MemoryFull:
        pass
    else:
        raise AssertionError("the cap still holds for the topics in the index")
