"""A tab's stored transcript is its account's, in Chromium.

The page keeps the conversation shown in the tab's sessionStorage (a reload's
first paint). sessionStorage outlives a change of account: another tab signs the
browser in as bob, then alice's tab is reloaded. Before, the reload painted
alice's conversation signed in as bob, and when bob's history did not load it
stayed: what was typed next looked like alice's thread but went to bob, and was
saved again as bob's. Now the transcript is stored with its owner (a hash of the
token, never the token) and only that account's page shows it.
"""

from __future__ import annotations

from typing import Any

from tests.spine.test_browser import BROWSER_TESTS
from tests.spine.test_web_account_switch import ALICE, BOB, Site, send
from tests.spine.test_web_account_switch import site as site  # the fixture

pytestmark = BROWSER_TESTS


async def transcript(tab: Any) -> str:
    stored: str | None = await tab.evaluate("sessionStorage.getItem('roost.transcript')")
    return stored or ""


async def reload_as(tab: Any, who: str) -> None:
    """Reload the tab (its sessionStorage kept); wait until its history was answered
    (failed, when routed to `failing_history`) and the header names `who`."""
    async with tab.expect_response(lambda r: "/api/history" in r.url):
        await tab.reload()
    await tab.locator("#composer").wait_for(state="visible")
    await tab.locator("#account", has_text=who).wait_for()


async def failing_history(route: Any) -> None:
    await route.fulfill(status=503, body="busy")


async def test_one_accounts_transcript_never_shows_in_anothers_page(site: Site) -> None:
    tab = await site.context.new_page()
    await tab.goto(f"{site.base}/#token={ALICE}")
    await tab.locator("#composer").wait_for(state="visible")
    assert await send(tab, "echo: alice's PIN is 4711") == "alice's PIN is 4711"
    assert "4711" in await transcript(tab)
    assert ALICE not in await transcript(tab), "the token is not stored with the transcript"

    # alice's own reload, her history not loading: her conversation is painted
    await tab.route("**/api/history*", failing_history)
    await reload_as(tab, "local")
    assert "4711" in await tab.locator("#messages").inner_text()

    # another tab signs the browser in as bob; alice's tab is reloaded, bob's history fails
    other = await site.context.new_page()
    await other.goto(f"{site.base}/")
    await other.evaluate(f"localStorage.setItem('roost.token', {BOB!r})")
    await reload_as(tab, "bob")
    assert "4711" not in await tab.locator("#messages").inner_text()
    assert "4711" not in await transcript(tab)
    assert await send(tab, "echo: bob writes on") == "bob writes on"
    shown = await tab.locator("#messages").inner_text()
    assert "4711" not in shown and "bob writes on" in shown
    assert "4711" not in await transcript(tab)
    assert BOB not in await transcript(tab)

    # and back to alice: bob's words are not hers either
    await other.evaluate(f"localStorage.setItem('roost.token', {ALICE!r})")
    await reload_as(tab, "local")
    assert "bob writes on" not in await tab.locator("#messages").inner_text()
    assert "bob writes on" not in await transcript(tab)

    # with the history loading again, each sees their own
    await tab.unroute("**/api/history*", failing_history)
    await reload_as(tab, "local")
    await tab.locator(".msg.assistant", has_text="alice's PIN is 4711").wait_for()
    assert "bob writes on" not in await tab.locator("#messages").inner_text()
    await other.close()
    await tab.close()
