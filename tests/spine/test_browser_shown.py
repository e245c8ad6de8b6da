"""What the page shows after a reload, in a real Chromium over a real roost: tool cards
named as the person knows the tool (me.wordcount), failed turns with the person's own
message, what the person typed with file chips and thumbnails (not the model's text),
the question above an answer still running, and a stopped answer marked once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import expect

from tests.spine.browser_kit import FAILED, reload, save_wordcount, signed_in
from tests.spine.conftest import Browsers
from tests.spine.test_browser import BROWSER_TESTS, Page
from tests.spine.test_web_upload import png

pytestmark = BROWSER_TESTS


@pytest_asyncio.fixture(loop_scope="session")
async def page(
    home: Path, monkeypatch: pytest.MonkeyPatch, browsers: Browsers
) -> AsyncIterator[Page]:
    monkeypatch.setenv("ROOST_LLM__VISION", "true")  # photos reach the model
    save_wordcount(home)
    async with signed_in(monkeypatch, browsers) as page:
        yield page


async def test_tool_cards_and_failed_turns_stay_after_a_reload(page: Page) -> None:
    tab = page.tab
    answer = await page.send("count: one two three")
    assert await answer.inner_text() == "There are 3 words."
    card = tab.locator(".msg.assistant .tool summary")
    assert (await card.inner_text()).startswith("me.wordcount · done")  # not me__wordcount

    await tab.fill("#input", "fail")
    await tab.press("#input", "Enter")
    failed = tab.locator(".msg.assistant.status-failed")
    await failed.wait_for()
    assert FAILED in await failed.locator(".error").inner_text()

    await reload(page)
    await card.wait_for()
    assert (await card.inner_text()).startswith("me.wordcount · done")
    await card.click()  # the card opens: what the tool was given and gave back
    assert "one two three" in await tab.locator(".msg.assistant .tool-args").inner_text()
    assert await tab.locator(".msg.assistant .tool-result").inner_text() == "3"
    users = await tab.locator(".msg.user .body").all_inner_texts()
    assert users == ["count: one two three", "fail"]  # the failed turn's message stays
    await failed.wait_for()
    assert FAILED in await failed.locator(".error").inner_text()
    assert await failed.locator("button.retry").is_visible()
    asked = [m.content for m in page.model.requests[-1].messages if m.role == "user"]
    assert "fail" in asked  # (the last request was the failed one itself)

    await failed.locator("button.retry").click()  # sent again, as a new message
    await tab.locator(".msg.user .body").nth(2).wait_for()
    assert await tab.locator(".msg.user .body").nth(2).inner_text() == "fail"


async def test_what_was_typed_and_sent_shows_not_the_model_text(page: Page) -> None:
    tab = page.tab
    await tab.set_input_files(
        "#file-input",
        files=[
            {"name": "photo.png", "mimeType": "image/png", "buffer": png(40, 20)},
            {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"cardamom\n"},
        ],
    )
    await tab.locator("#chips .chip").nth(1).wait_for()
    await page.send("echo: look at these")
    assert "cardamom" in page.model.asked(page.model.requests[-1])  # the model read the file

    await reload(page)
    asked = tab.locator(".msg.user").first
    await asked.locator(".sent-files .chip").nth(1).wait_for()
    assert await asked.locator(".body").inner_text() == "echo: look at these"
    names = await asked.locator(".sent-files .chip-name").all_inner_texts()
    assert names == ["photo.png", "notes.txt"]
    thumb = asked.locator(".sent-files canvas.thumb")  # from GET /api/attachment
    await thumb.wait_for()
    assert await thumb.evaluate("c => c.width / c.height") == 2
    assert await asked.locator(".sent-files svg.icon-file").count() == 1
    assert "cardamom" not in await tab.locator("#messages").inner_text()


async def test_a_reload_mid_answer_keeps_the_question_and_a_stop_is_marked_once(
    page: Page,
) -> None:
    tab = page.tab
    await page.send("echo: before")
    await tab.fill("#input", "endless")
    await tab.press("#input", "Enter")
    await tab.locator(".msg.assistant.status-streaming .body", has_text="and on").wait_for()

    await reload(page)
    streaming = tab.locator(".msg.assistant.status-streaming")
    await streaming.locator(".body", has_text="and on").wait_for()
    roles = await tab.locator("#messages .msg").evaluate_all(
        "ms => ms.map(m => (m.classList.contains('user') ? 'user: ' : 'roost: ')"
        " + m.querySelector('.body').textContent.trim().slice(0, 12))"
    )
    assert roles[:3] == ["user: echo: before", "roost: before", "user: endless"]
    assert roles[3].startswith("roost: and on")  # the question above its answer

    await tab.click("#stop")
    stopped = tab.locator(".msg.assistant.status-stopped")
    await stopped.wait_for()
    note = tab.get_by_text("Stopped — the answer was cut here.")
    for _ in range(2):
        # drawn with the stopped answer (a tick after its class); the history the page
        # fetches may redraw the list meanwhile, so the count is awaited, not sampled
        await expect(note).to_have_count(1, timeout=20_000)
        assert "[stopped]" not in await tab.locator("#messages").inner_text()
        assert "and on" in await stopped.locator(".body").inner_text()
        await reload(page)
        await stopped.wait_for()
