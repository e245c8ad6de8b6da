"""The web page's `?chat=` name and message limit, in a real Chromium over a real roost.

A `?chat=` name the daemon would refuse (outside [A-Za-z0-9_-], or over 64
characters) opens no chat: the page says so, names the rule, shows nothing of
the default chat and offers a valid name close to it. The page refuses a
message only past the limit the daemon states (`[limits] max_message_chars`,
GET /api/status), counted in characters as the daemon counts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.app.live import reload_hooks
from bridge.core.config import load_settings
from tests.spine.browser_kit import opened
from tests.spine.conftest import Browsers
from tests.spine.test_browser import BROWSER_TESTS, TOKEN, EchoModel

pytestmark = BROWSER_TESTS
SHOWN = "#composer:visible, #chat-refused:visible"  # whichever the page opens with


@pytest.fixture(autouse=True)
def web_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOST_WEB__PORT", "0")
    monkeypatch.setenv("ROOST_WEB__TOKEN", TOKEN)


async def user_texts(tab: Any, chat: str) -> list[str]:
    """The person's messages the daemon keeps for `chat` (GET /api/history)."""
    script = """async ([chat, token]) => (await (await fetch(`/api/history?chat=${chat}`,
        {headers: {Authorization: `Bearer ${token}`}})).json()).messages
        .filter(m => m.role === "user").map(m => m.text)"""
    texts: list[str] = await tab.evaluate(script, [chat, TOKEN])
    return texts


async def test_a_chat_name_roost_refuses_opens_no_chat_and_says_why(browsers: Browsers) -> None:
    async with opened(browsers) as page:
        tab = page.tab
        await page.send("echo: in the default chat")
        await tab.goto(f"{page.base}/?chat=Eink%C3%A4ufe")
        await tab.locator(SHOWN).first.wait_for()
        notice = tab.locator("#chat-refused")
        assert await notice.is_visible(), "the page opened a chat for ?chat=Einkäufe"
        said = await notice.inner_text()
        assert "“Einkäufe”" in said and "No chat was opened" in said
        assert "1 to 64 characters" in said and "A–Z" in said and "“_” and “-”" in said
        assert not await tab.locator("#composer").is_visible()  # nothing can be typed
        assert "in the default chat" not in await tab.inner_text("body")
        assert "not allowed" in await tab.inner_text("#status")

        await tab.evaluate("sessionStorage.clear()")  # the chat drawn from the daemon only
        await tab.get_by_role("button", name="Open the chat “Einkaufe”").click()
        await tab.locator("#composer").wait_for(state="visible")
        assert tab.url.endswith("/?chat=Einkaufe")
        await page.send("echo: milk, eggs, bread")
        assert await user_texts(tab, "Einkaufe") == ["echo: milk, eggs, bread"]
        assert await user_texts(tab, "default") == ["echo: in the default chat"]


async def test_a_message_past_16000_characters_goes_when_the_limit_is_larger(
    browsers: Browsers,
) -> None:
    config = {"limits": {"max_message_chars": 30_000}}
    async with opened(browsers, config=config) as page:
        model: EchoModel = page.model
        text = "lorem ipsum " * 1700  # 20,400 characters, 20,399 once trimmed
        await page.send(text)
        emoji = "\U0001f600" * 20_000  # 40,000 UTF-16 units, 20,000 characters
        await page.send(emoji)
        asked = [model.asked(r) for r in model.requests]  # (and a summary's, in the background)
        assert text.strip() in asked and emoji in asked


async def test_past_the_configured_limit_the_page_names_it_and_sends_nothing(
    browsers: Browsers,
) -> None:
    async with opened(browsers, config={"limits": {"max_message_chars": 100}}) as page:
        tab = page.tab
        await tab.fill("#input", "x" * 101)
        await tab.press("#input", "Enter")
        status = tab.locator("#status", has_text="too long")
        await status.wait_for()
        assert "101 characters, this roost takes at most 100" in await status.inner_text()
        assert await tab.locator(".msg").count() == 0
        assert await tab.input_value("#input") == "x" * 101  # given back to shorten
        assert page.model.requests == []


async def test_a_limit_raised_by_a_reload_holds_in_the_open_page(browsers: Browsers) -> None:
    async with opened(browsers, config={"limits": {"max_message_chars": 20_000}}) as page:
        new = load_settings(limits={"max_message_chars": 30_000})  # what a reload reads
        for hook in reload_hooks(page.roost):
            hook.apply(new)
        text = "echo: " + "y" * 25_000  # signed in under 20,000: the page asks the daemon again
        await page.send(text)
        assert text in [page.model.asked(r) for r in page.model.requests]
