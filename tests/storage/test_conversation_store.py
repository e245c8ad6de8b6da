"""The conversation archive, its pages and the person's edits (`bridge.core.conversations`,
`history_page`, `conversation_edits`) on both backends: pages of the current and archived
conversations, titles, renames and deletes scoped to one chat, search, pruning by count
and age, failed turns carried into the archive."""

from __future__ import annotations

import pytest

from bridge.core.conversation_edits import ConversationEdits, EditError
from bridge.core.sessions import SessionKey, SessionStore
from bridge.storage.protocol import Database
from tests.masking import NO_SECRETS, m
from tests.sessions_kit import store_on
from tests.storage.conftest import OpenDb

KEY = SessionKey("local", "web", "c")
OTHER = SessionKey("local", "web", "other")


@pytest.fixture
def store(db: Database) -> SessionStore:
    return store_on(db)


async def said(store: SessionStore, key: SessionKey, *texts: str, at: float = 1.0) -> None:
    for n, text in enumerate(texts):
        await store.append(key, m(text), m(f"re: {text}"), f"{text}-{n}", at)


async def test_pages_go_backwards_and_start_with_the_summary(store: SessionStore) -> None:
    await said(store, KEY, *(f"q{i}" for i in range(5)))
    page = await store.archive.page(KEY, None, None, 4, 2.0)
    assert page is not None and page.current and page.more
    assert [x["text"] for x in page.messages] == ["q3", "re: q3", "q4", "re: q4"]
    older = await store.archive.page(KEY, None, page.messages[0]["seq"], 100, 2.0)
    assert older is not None and not older.more and len(older.messages) == 6
    await store._db.execute("UPDATE sessions SET summary = 'earlier talk'")
    store.forget(KEY)
    first = await store.archive.page(KEY, None, None, 100, 2.0)
    assert first is not None and first.messages[0]["status"] == "summary"
    assert first.messages[0]["text"] == "earlier talk"


async def test_an_archived_conversation_keeps_its_title_pages_and_failed_turns(
    store: SessionStore,
) -> None:
    await said(store, KEY, "plan a trip to Porto", "and the train?")
    await store.failed(KEY, m("what about hotels"), m(""), m("The model is away."), 2.0)
    ident = await store.archive.current(KEY, 2.0)
    await store.reset(KEY, 3.0)
    assert await store.archive.current(KEY, 3.0) != ident
    page = await store.archive.page(KEY, ident, None, 100, 4.0)
    assert page is not None and not page.current
    shown = [(x["role"], x["text"], x["status"]) for x in page.messages]
    failed = [("user", "what about hotels", "done"), ("assistant", "The model is away.", "error")]
    assert all(x in shown for x in failed) and len(shown) == 6
    assert ("user", "plan a trip to Porto", "done") in shown
    assert shown[0] == ("user", "plan a trip to Porto", "done")
    assert shown[-2:] == failed, "in their place: the failed turns are on the same database"
    listed = await store.archive.listing(KEY, 4.0)
    assert listed[1]["title"] == "plan a trip to Porto" and listed[1]["turns"] == 2
    assert await store.archive.page(OTHER, ident, None, 100, 4.0) is None, "another chat's"


async def test_rename_delete_and_search_stay_inside_their_chat(
    store: SessionStore, db: Database, open_db: OpenDb
) -> None:
    edits = ConversationEdits(db, store.archive, lambda _t: NO_SECRETS)
    await said(store, KEY, "Straße und Brücke")
    old = await store.archive.current(KEY, 1.0)
    await store.reset(KEY, 2.0)
    await said(store, KEY, "something else")
    assert await edits.rename(KEY, old, "  Bridges   ") == "Bridges"
    assert await edits.rename(OTHER, old, "mine now") is None
    with pytest.raises(EditError):
        await edits.rename(KEY, old, "   ")
    found = await edits.search(KEY, "STRASSE", 3.0)
    assert [(r["conversation"], r["hits"], r["title"]) for r in found] == [(old, 2, "Bridges")]
    assert found[0]["snippet"][slice(*found[0]["match"])] == "Straße"
    assert await edits.search(OTHER, "strasse", 3.0) == []
    current = await store.archive.current(KEY, 3.0)
    assert not await edits.delete(KEY, current), "the current one is reset first"
    assert not await edits.delete(OTHER, old)
    other = ConversationEdits(
        await open_db(), store_on(await open_db()).archive, lambda _t: NO_SECRETS
    )
    assert await other.delete(KEY, old)  # another instance
    assert not await edits.delete(KEY, old)
    assert await store.archive.page(KEY, old, None, 10, 4.0) is None
    assert await db.fetch_value("SELECT count(*) FROM conversation_messages") == 0


async def test_the_archive_is_pruned_by_count_and_age(store: SessionStore, db: Database) -> None:
    store.archive.keep_count = 2
    for n in range(4):
        await said(store, KEY, f"conversation {n}", at=float(n))
        await store.reset(KEY, float(n) + 0.5)
    listed = await store.archive.listing(KEY, 10.0)
    assert [x["title"] for x in listed] == ["", "conversation 3", "conversation 2"]
    assert await db.fetch_value("SELECT count(*) FROM conversation_messages") == 4
    store.archive.keep_days = 1
    await said(store, KEY, "late", at=3 * 86400.0)
    await store.reset(KEY, 3 * 86400.0)
    assert [x["title"] for x in await store.archive.listing(KEY, 4 * 86400.0)] == ["", "late"]
