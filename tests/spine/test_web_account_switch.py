"""A `#token=` link of another tenant does not switch an open page unasked, in Chromium.

Two tenants with web tokens on one roost: the local one (alice's page) and bob
([tenants.bob] web_token). Bob gets alice to open `/#token=<bob's token>`, in
her open tab and in a new one. Before, the page stored bob's token over hers
without a word and every request read the stored token, so her open tab went
on as bob: what she typed next landed in bob's history. Now the page asks,
naming bob; declining keeps her token; a refused link token keeps hers too;
the header says who is signed in; and when another tab does switch, her open
tab stops sending and says so instead of going on as bob.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest_asyncio
from pydantic import SecretStr

from bridge.app.build import build
from bridge.app.channels_up import web_channel
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock
from tests.spine.conftest import Browsers
from tests.spine.test_browser import ARGS, BROWSER_TESTS, EchoModel

pytestmark = BROWSER_TESTS

ALICE = "alice-local-token-0123456789"
BOB = "bob-page-token-0123456789abcd"
WRONG = "not-a-known-token-0123456789"
ASKED_S = 15_000  # ms: the question shows at once, or the page switched unasked


@dataclass
class Site:
    base: str
    context: Any

    async def history(self, token: str) -> list[str]:
        """The texts of the tenant's current conversation, as the daemon keeps them."""
        async with aiohttp.ClientSession(self.base) as http:
            headers = {"Authorization": f"Bearer {token}"}
            async with http.get("/api/history?chat=default", headers=headers) as r:
                assert r.status == 200, await r.text()
                body = await r.json()
        return [m["text"] for m in body["messages"]]


@pytest_asyncio.fixture(loop_scope="session")
async def site(home: Path, clock: Clock, browsers: Browsers) -> AsyncIterator[Site]:
    base = load_settings(tenants={"bob": {"web_token": BOB}})
    web = base.web.model_copy(update={"port": 0, "token": SecretStr(ALICE)})
    settings = base.model_copy(update={"web": web})
    roost = await build(settings, backend=EchoModel(), audit=MemoryAudit(), clock=clock)
    launched = web_channel(settings, roost, {})
    await launched.channel.start()
    assert launched.port is not None
    browser = await browsers.launch(ARGS)
    context = await browser.new_context()
    try:
        yield Site(f"http://127.0.0.1:{launched.port()}", context)
    finally:
        await context.close()
        await launched.channel.stop()
        await roost.aclose()


async def send(tab: Any, text: str) -> str:
    done = tab.locator(".msg.assistant.status-done")
    before = await done.count()
    await tab.fill("#input", text)
    await tab.press("#input", "Enter")
    await done.nth(before).wait_for()
    body: str = await done.nth(before).locator(".body").inner_text()
    return body


async def stored(tab: Any) -> str | None:
    token: str | None = await tab.evaluate("localStorage.getItem('roost.token')")
    return token


async def test_another_tenants_link_asks_and_alice_never_writes_into_bobs_history(
    site: Site,
) -> None:
    alice = await site.context.new_page()
    await alice.goto(f"{site.base}/#token={ALICE}")
    await alice.locator("#composer").wait_for(state="visible")
    assert await send(alice, "echo: first from alice") == "first from alice"

    # bob's link opened in a new tab of alice's browser, her tab still open
    other = await site.context.new_page()
    await other.goto(f"{site.base}/#token={BOB}")
    # the question, or (before the fix) the chat, signed in as bob unasked
    await other.locator("#switch-view:not([hidden]), #composer:not([hidden])").first.wait_for()
    # alice goes on writing in her open tab: it stays hers
    assert await send(alice, "echo: alice's secret plums") == "alice's secret plums"
    assert not any("plums" in t for t in await site.history(BOB))
    assert "alice's secret plums" in await site.history(ALICE)
    # the new tab asks, naming bob, and stored nothing yet
    await other.locator("#switch-view").wait_for(state="visible", timeout=ASKED_S)
    text = await other.locator("#switch-text").inner_text()
    assert "This link signs this browser in as another account" in text and "bob" in text
    assert await stored(other) == ALICE
    account = alice.locator("#account")
    await account.wait_for(state="visible", timeout=ASKED_S)
    mine = await account.inner_text()
    assert mine == "as local"

    # bob's link opened in alice's open tab (a same-document navigation: hashchange)
    await alice.goto(f"{site.base}/#token={BOB}")
    question = alice.locator("#switch-view")
    await question.wait_for(state="visible", timeout=ASKED_S)
    assert "bob" in await alice.locator("#switch-text").inner_text()
    assert "#token" not in alice.url
    assert await stored(alice) == ALICE
    await alice.locator("#switch-no").click()
    await question.wait_for(state="hidden")
    assert await send(alice, "echo: alice again") == "alice again"
    assert await account.inner_text() == mine
    assert not any("alice" in t for t in await site.history(BOB))

    # a well-formed wrong token in a link: refused, and alice's token stays
    await alice.goto(f"{site.base}/#token={WRONG}")
    await alice.locator("#status", has_text="refused").wait_for()
    assert await stored(alice) == ALICE
    assert await alice.locator("#composer").is_visible()
    assert await send(alice, "echo: still alice") == "still alice"

    # the new tab switches to bob once asked: alice's open tab stops and says so
    await other.locator("#switch-yes").click()
    await other.locator("#account", has_text="bob").wait_for()
    assert await stored(other) == BOB
    notice = alice.locator("#account-notice")
    await notice.wait_for(state="visible", timeout=ASKED_S)
    assert "bob" in await notice.inner_text()
    assert await alice.locator("#composer").is_hidden()
    bobs = await site.history(BOB)
    assert not any("alice" in t for t in bobs), bobs
    assert await send(other, "echo: bob here") == "bob here"
    assert "bob here" not in await site.history(ALICE)
