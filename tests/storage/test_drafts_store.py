"""The tool draft store (`bridge.personal_tools.drafts`) on both backends: versions kept
per chat and tenant, a draft expiring 7 days after its newest version, at most twenty
versions, what a consent prompt showed, only masked source, and another connection (another
instance) seeing every write."""

from __future__ import annotations

import pytest

from bridge.core.sessions import SessionKey
from bridge.personal_tools.drafts import KEEP_MS, DraftStore
from bridge.storage.protocol import Database
from bridge.types.masked import Unmasked
from forge.library import ToolSpec, build_spec
from tests.masking import m
from tests.storage.conftest import OpenDb

ONE = 'def run() -> int:\n    """One."""\n    return 1\n'
TWO = 'def run() -> int:\n    """Two."""\n    return 2\n'
CHAT = SessionKey("local", "web", "c1")


def spec(source: str, name: str = "num") -> ToolSpec:
    made = build_spec(name, "a number", source).tool
    assert made is not None
    return made


class Ms:
    def __init__(self) -> None:
        self.now = 1_800_000_000_000

    def __call__(self) -> int:
        return self.now


async def test_versions_are_kept_and_a_draft_expires_after_seven_days(
    db: Database, open_db: OpenDb
) -> None:
    clock = Ms()
    store = DraftStore(db, clock)
    first = await store.put(CHAT, spec(ONE), m(ONE))
    assert (first.current.version, first.previous, first.changed) == (1, None, True)
    same = await store.put(CHAT, spec(ONE), m(ONE))
    assert same.current.version == 1 and not same.changed
    clock.now += KEEP_MS - 1000
    second = await store.put(CHAT, spec(TWO), m(TWO))
    assert second.previous is not None and second.previous.spec.source == ONE
    assert (second.current.version, second.changed) == (2, True)
    other = DraftStore(await open_db(), clock)  # another instance
    assert await other.by_hash(CHAT, "num", first.current.spec.sha256) is not None
    assert [d.spec.source for d in await other.drafts(CHAT)] == [TWO]
    assert await other.drafts(SessionKey("local", "web", "c2")) == []
    assert await other.drafts(SessionKey("bob", "web", "c1")) == []
    clock.now += KEEP_MS - 1000  # v2 is younger than 7 days: still there
    latest = await store.latest(CHAT, "num")
    assert latest is not None and latest.version == 2
    clock.now += 2000  # now it is not
    assert await store.latest(CHAT, "num") is None and await store.drafts(CHAT) == []
    assert await store.prune() == 2
    assert await db.fetch_value("SELECT COUNT(*) FROM tool_drafts") == 0


async def test_at_most_twenty_versions_and_only_masked_source(db: Database) -> None:
    store = DraftStore(db, Ms())
    for n in range(25):
        source = f'def run() -> int:\n    """N."""\n    return {n}\n'
        await store.put(CHAT, spec(source), m(source))
    versions = [r[0] for r in await db.fetch_all("SELECT version FROM tool_drafts")]
    assert sorted(versions) == list(range(6, 26))
    with pytest.raises(Unmasked):
        await store.put(CHAT, spec(ONE), ONE)  # type: ignore[arg-type]


async def test_what_a_prompt_showed_and_a_saved_draft_goes(db: Database) -> None:
    store = DraftStore(db, Ms())
    written = await store.put(CHAT, spec(ONE), m(ONE))
    assert await store.shown(CHAT, "num") is None
    await store.show(CHAT, "num", "aaa")
    await store.show(CHAT, "num", written.current.spec.sha256)  # the newer prompt wins
    assert await store.shown(CHAT, "num") == written.current.spec.sha256
    await store.put(SessionKey("bob", "web", "c1"), spec(ONE), m(ONE))
    await store.remove(CHAT, "num")
    assert await store.latest(CHAT, "num") is None and await store.shown(CHAT, "num") is None
    assert await db.fetch_value("SELECT COUNT(*) FROM tool_drafts") == 1, "bob's stays"
