"""The chat list and versions in a real Chromium over a real roost: rename, search and
delete conversations in the drawer; edit a sent message and ask for another answer,
the old ones kept, arrows to switch between them (and the model continues from the
version shown).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.spine.browser_kit import signed_in
from tests.spine.conftest import Browsers
from tests.spine.test_browser import BROWSER_TESTS, Page

pytestmark = BROWSER_TESTS


@pytest_asyncio.fixture(loop_scope="session")
async def page(
    home: Path, monkeypatch: pytest.MonkeyPatch, browsers: Browsers
) -> AsyncIterator[Page]:
    async with signed_in(monkeypatch, browsers) as page:
        yield page


async def drawer(page: Page) -> None:
    if await page.tab.locator("#drawer").is_hidden():
        await page.tab.click("#chats")
    await page.tab.locator("#conversation-list li").first.wait_for()


async def test_rename_search_and_delete_conversations(page: Page) -> None:
    tab = page.tab
    await page.send("echo: the garden needs basil")
    await tab.click("#new-chat")
    await tab.locator("#welcome").wait_for(state="visible")
    await page.send("echo: plans for the trip")
    await drawer(page)
    rows = tab.locator("#conversation-list .conversation-row")
    assert await rows.count() == 2

    await rows.first.get_by_role("button", name="Rename").click()
    title = rows.first.locator("form.rename input")
    await title.fill("Lisbon trip")
    await title.press("Enter")
    await tab.locator(".conversation-title", has_text="Lisbon trip").wait_for()

    await tab.fill("#search-input", "BASIL")
    hit = tab.locator("#conversation-list .conversation.result")
    await hit.first.wait_for()
    assert await hit.count() == 1
    assert await hit.locator("mark").first.inner_text() == "basil"
    await hit.click()  # opens the old conversation, read-only
    await tab.locator("#readonly").wait_for(state="visible")
    await tab.locator(".msg.user .body", has_text="the garden needs basil").wait_for()
    await tab.click("#back")
    await tab.locator(".msg.user .body", has_text="plans for the trip").wait_for()

    await drawer(page)
    await tab.fill("#search-input", "")
    old = tab.locator("#conversation-list .conversation-row", has_text="basil")
    await old.wait_for()
    delete = old.get_by_role("button", name="Delete")
    await delete.click()
    assert await old.count() == 1  # one press only asks
    await old.get_by_text("Delete?").wait_for()
    await delete.click()
    await old.wait_for(state="detached")
    titles = await tab.locator("#conversation-list .conversation-title").all_inner_texts()
    assert titles == ["Lisbon trip"]
    archived = "SELECT COUNT(*) FROM conversations WHERE archived_at IS NOT NULL"
    assert await page.roost.database.fetch_value(archived) == 0  # gone on the daemon too


async def test_edit_a_message_and_regenerate_an_answer_with_arrows(page: Page) -> None:
    tab = page.tab
    await page.send("echo: my cat is Mira")
    await page.send("joke")
    answer = tab.locator(".msg.assistant").last
    assert await answer.locator(".body").inner_text() == "Joke number 1."

    await answer.get_by_role("button", name="Another answer").click()
    await tab.locator(".msg.assistant .body", has_text="Joke number 2.").wait_for()
    arrows = tab.locator(".msg.assistant").last.locator(".versions")
    await arrows.wait_for()
    assert await arrows.locator(".version-of").inner_text() == "2 / 2"
    await arrows.get_by_role("button", name="Previous version").click()
    await tab.locator(".msg.assistant .body", has_text="Joke number 1.").wait_for()
    assert await tab.locator(".msg.assistant .version-of").inner_text() == "1 / 2"

    first = tab.locator(".msg.user").first
    await first.get_by_role("button", name="Edit this message").click()
    box = first.locator("form.edit textarea")
    assert await box.input_value() == "echo: my cat is Mira"
    await box.fill("echo: my dog is Rex")
    await box.press("Enter")
    await tab.locator(".msg.assistant .body", has_text="my dog is Rex").wait_for()
    texts = await tab.locator("#messages .msg .body").all_inner_texts()
    assert [t.strip() for t in texts] == ["echo: my dog is Rex", "my dog is Rex"]  # later turns go
    edited = tab.locator(".msg.user").first.locator(".versions")
    assert await edited.locator(".version-of").inner_text() == "2 / 2"  # on the message
    await page.send("echo: and now")
    asked = [m.content for m in page.model.requests[-1].messages if m.role == "user"]
    assert "echo: my dog is Rex" in asked and "echo: my cat is Mira" not in asked

    await edited.get_by_role("button", name="Previous version").click()
    await tab.locator(".msg.assistant .body", has_text="Joke number 1.").wait_for()
    texts = await tab.locator("#messages .msg .body").all_inner_texts()
    assert [t.strip() for t in texts] == [
        "echo: my cat is Mira",
        "my cat is Mira",
        "joke",
        "Joke number 1.",
    ]
    await page.send("echo: back again")
    asked = [m.content for m in page.model.requests[-1].messages if m.role == "user"]
    assert "echo: my cat is Mira" in asked and "echo: my dog is Rex" not in asked
