"""Versions of a turn (`bridge.core.versions`) on both backends: a branch keeps the tail as
a version and leaves the session before it, the page counts the versions, a switch brings a
kept one back in one transaction, an undone branch restores the newest, another connection
sees every step, and archiving the conversation forgets its versions."""

from __future__ import annotations

from bridge.core.sessions import SessionKey, SessionStore
from bridge.core.versions import TurnVersions, VersionError
from bridge.storage.protocol import Database
from tests.masking import m
from tests.sessions_kit import store_on
from tests.storage.conftest import OpenDb

KEY = SessionKey("local", "web", "c")


async def said(store: SessionStore, *texts: str) -> None:
    for n, text in enumerate(texts):
        await store.append(KEY, m(text), m(f"re: {text}"), f"m{n}", float(n + 1))


async def asked(db: Database) -> list[tuple[int, str]]:
    rows = await db.fetch_all(
        "SELECT id, content FROM session_messages WHERE role='user' ORDER BY id"
    )
    return [(int(i), str(c)) for i, c in rows]


async def test_branch_switch_and_undo_keep_every_version(db: Database, open_db: OpenDb) -> None:
    store = store_on(db)
    versions: TurnVersions = store.archive.shown.versions
    await said(store, "one", "two", "three")
    conversation = await store.archive.current(KEY, 5.0)
    (_, _), (two, _), _ = await asked(db)
    point = await versions.branch(KEY, conversation, two)
    assert (point.turn, point.content) == (2, "two")
    assert [c for _, c in await asked(db)] == ["one"]
    assert await db.fetch_value("SELECT turns FROM sessions") == 1
    other = TurnVersions(await open_db())  # another instance sees the kept version
    assert len(await other.siblings(conversation, KEY.tenant, 2, "m0")) == 1
    store.forget(KEY)
    await store.append(KEY, m("two, edited"), m("re: edited"), "m9", 9.0)
    seq = (await asked(db))[-1][0]
    shown = await versions.shown(KEY, conversation, [1, 2])
    assert shown == {2: (1, 2, True)}, "the new turn is the second of two, and an edit"
    assert await other.switch(KEY, conversation, seq, 0) is True
    assert [c for _, c in await asked(db)] == ["one", "two", "three"]
    assert await db.fetch_value("SELECT turns FROM sessions") == 3
    first = (await asked(db))[1][0]
    assert await versions.switch(KEY, conversation, first, 0) is False, "shown already"
    try:
        await versions.switch(KEY, conversation, first, 5)
    except VersionError as exc:
        assert "2 versions" in str(exc)
    else:
        raise AssertionError("an index past the versions is refused")
    point = await versions.branch(KEY, conversation, first)
    assert await versions.undo_branch(KEY, conversation, point) is True
    assert [c for _, c in await asked(db)] == ["one", "two, edited"], "the newest came back"
    assert await versions.undo_branch(KEY, conversation, point) is False, "turn 2 exists"


async def test_a_missing_message_is_refused_and_archiving_forgets_the_versions(
    db: Database,
) -> None:
    store = store_on(db)
    versions = store.archive.shown.versions
    await said(store, "one", "two")
    conversation = await store.archive.current(KEY, 5.0)
    try:
        await versions.branch(KEY, conversation, 10**6)
    except VersionError:
        pass
    else:
        raise AssertionError("a message not in the session cannot be branched")
    await versions.branch(KEY, conversation, (await asked(db))[1][0])
    assert await db.fetch_value("SELECT count(*) FROM turn_versions") == 1
    store.forget(KEY)
    await store.reset(KEY, 6.0)
    assert await db.fetch_value("SELECT count(*) FROM turn_versions") == 0
