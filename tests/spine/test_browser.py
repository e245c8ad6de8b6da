"""The web page in a real headless Chromium (Debian's), driven by Playwright.

The browser is started by the test. Without Chromium the test is skipped
with the reason printed, unless ROOST_REQUIRE_BROWSER=1 (set by .ci/run,
which installs it), where a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bridge.app.build import build
from bridge.channels.web import WebChannel
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, ScriptedBackend

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "browser-token-0123456789"

if CHROMIUM is None and os.environ.get("ROOST_REQUIRE_BROWSER") == "1":
    raise RuntimeError("ROOST_REQUIRE_BROWSER=1 but no chromium on PATH")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed")


@pytest.fixture
async def page(settings: Settings, clock: Clock) -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    backend = ScriptedBackend("Hello from **roost** with `code` and <b>no html</b>.")
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    web = WebChannel(roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0)
    await web.start()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        tab = await browser.new_page()
        tab.set_default_timeout(20_000)
        await tab.goto(f"http://127.0.0.1:{web.port}/#token={TOKEN}")
        yield tab, roost
        await browser.close()
    await web.stop()
    await roost.aclose()


async def test_type_a_message_and_see_the_answer(page: Any) -> None:
    tab, roost = page
    assert "#token" not in tab.url  # the token leaves the address bar
    await tab.fill("#input", "hi there")
    await tab.press("#input", "Enter")
    answer = tab.locator(".msg.assistant.status-done .body").first
    await answer.wait_for()
    assert await answer.locator("strong").inner_text() == "roost"
    assert await answer.locator("code").inner_text() == "code"
    assert "<b>no html</b>" in await answer.inner_text()  # shown as text, not markup
    assert await tab.locator(".msg.user .body").first.inner_text() == "hi there"
    assert [
        m.content for m in roost.backend.requests[0].messages if not m.content.startswith("[Now: ")
    ] == ["hi there"]


async def test_slash_command_hints_and_replies(page: Any) -> None:
    tab, _ = page
    await tab.fill("#input", "/stat")
    hints = tab.locator("#hints")
    await hints.wait_for(state="visible")
    assert "/status" in await hints.inner_text()
    await tab.press("#input", "Tab")
    assert (await tab.input_value("#input")).startswith("/status")
    await tab.press("#input", "Enter")
    reply = tab.locator(".msg.assistant.status-done .body").first
    await reply.wait_for()
    assert "Tenant: local" in await reply.inner_text()


async def test_wrong_token_asks_for_one(page: Any) -> None:
    tab, _ = page
    await tab.evaluate("localStorage.clear()")
    port = tab.url.split(":")[2].split("/")[0]
    # Same page, new fragment: no reload, the open page reads the link (hashchange).
    await tab.goto(f"http://127.0.0.1:{port}/#token=wrong-token")
    await tab.locator("#token-view").wait_for(state="visible")
    assert "refused" in await tab.inner_text("#token-message")
    await tab.fill("#token-input", TOKEN)
    await tab.press("#token-input", "Enter")
    await tab.locator("#composer").wait_for(state="visible")
