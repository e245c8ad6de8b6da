"""The web page in a real headless Chromium (Debian's), driven by Playwright.

The browser is started by the test; the daemon's web channel is made by the
same factory `roost serve` uses (`bridge.app.channels_up.web_channel`), over
a real roost with a scripted model (`EchoModel`). Without Chromium the tests
are skipped with the reason printed, unless ROOST_REQUIRE_BROWSER=1 (set by
.ci/run, which installs it), where a missing browser is a failure.

A few tests need routes of the web server that may be missing on an older
daemon (history, stop, conversations, the vendored Markdown modules, the
SVG favicon): they skip, naming the route, only when it answers 404.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bridge.app.build import Roost, build
from bridge.app.channels_up import web_channel
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from tests.conftest import Clock
from tests.spine.conftest import Browsers
from tests.waits import HANG_S

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Each browser context opens a window, and each window of Chromium 156 preloads its
# address bar's popup (chrome://omnibox-popup.top-chrome) in a renderer of its own:
# about 0.7 s of CPU per context, as much as the roost page, for a popup no test opens.
# Chromium keeps only the last --disable-features, so ours repeats the features
# Playwright 1.65 turns off on Linux (playwright-core's chromiumSwitches.ts): check
# the list when Playwright is upgraded.
PLAYWRIGHT_OFF = [
    "AimEnabled",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsFirstBalancedModeAutoEnable",
    "HttpsUpgrades",
    "LensOverlay",
    "MediaRouter",
    "NetworkTimeServiceQuerying",
    "OptimizationHints",
    "PaintHolding",
    "PreconnectToSearch",
    "ThirdPartyStoragePartitioning",
]
OMNIBOX_POPUP = ["WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup"]
# After each page's first navigation Chromium starts a spare renderer for the next one, but
# a spare serves only its own browser context, and every test opens a new context: each
# test paid a renderer that never showed a page (30 renderers for 14 tests, 16 without).
SPARE_RENDERER = ["SpareRendererForSitePerProcess"]
# Chromium's fake microphone (a beep) and its permission prompt answered yes: only
# test_browser_attach records, but with the same flags every browser test shares one
# browser (one launch, one GPU process and network service per worker, not two). A page
# that asks for nothing behaves as without them.
MEDIA = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
# Playwright's features that do nothing on Linux (Windows, Edge): not repeated
NOT_ON_LINUX = {
    "TcpPortRandomizationWin",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
}
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=" + ",".join(PLAYWRIGHT_OFF + OMNIBOX_POPUP + SPARE_RENDERER),
    *MEDIA,
]
TOKEN = "browser-token-0123456789"
GREETING = "Hello from **roost** with `code` and <b>no html</b>."
CORPUS = Path(__file__).resolve().parents[2] / "js" / "test" / "xss_corpus.json"

if CHROMIUM is None and os.environ.get("ROOST_REQUIRE_BROWSER") == "1":
    raise RuntimeError("ROOST_REQUIRE_BROWSER=1 but no chromium on PATH")
# every browser test: skipped without Chromium, and run on the session's event loop,
# the loop the shared browser lives on (tests/spine/conftest.py)
BROWSER_TESTS = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed"),
    pytest.mark.asyncio(loop_scope="session"),
]
pytestmark = BROWSER_TESTS


class EchoModel:
    """A model for the page: "echo: X" answers X; "endless" streams until
    cancelled (and records that); anything else gets GREETING."""

    name = "echo"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []
        self.cancelled = 0

    def describe(self) -> str:
        return "echo test model"

    @staticmethod
    def asked(request: ModelRequest) -> str:
        users = [m.content for m in request.messages if m.role == "user"]
        users = [u for u in users if not u.startswith("[Now: ")]
        return users[-1] if users else ""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        asked = self.asked(request)
        if asked == "endless":
            try:
                while True:
                    yield TextDelta("and on ")
                    await asyncio.sleep(0.05)
            except (asyncio.CancelledError, GeneratorExit):
                self.cancelled += 1
                raise
        text = asked.removeprefix("echo: ") if asked.startswith("echo: ") else GREETING
        for start in range(0, len(text), 7):
            yield TextDelta(text[start : start + 7])
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


@dataclass
class Page:
    tab: Any
    roost: Roost
    model: EchoModel
    base: str

    async def send(self, text: str) -> Any:
        """Type `text`, press Enter, wait for the answer; returns its .body locator."""
        done = self.tab.locator(".msg.assistant.status-done")
        before = await done.count()
        await self.tab.fill("#input", text)
        await self.tab.press("#input", "Enter")
        await done.nth(before).wait_for()
        return done.nth(before).locator(".body")

    async def status_of(self, method: str, path: str, body: object = None) -> int:
        """The HTTP status of an authorised request from the page (to detect missing routes)."""
        script = """async ([method, path, body, token]) => (await fetch(path, {method,
            headers: {Authorization: `Bearer ${token}`, "Content-Type": "application/json"},
            body: body === null ? undefined : JSON.stringify(body)})).status"""
        status: int = await self.tab.evaluate(script, [method, path, body, TOKEN])
        return status

    async def need(self, method: str, path: str, body: object = None, why: str = "") -> None:
        if await self.status_of(method, path, body) == 404:
            pytest.skip(f"needs {method} {path.split('?')[0]} ({why or 'websrv branch'})")


@pytest_asyncio.fixture(loop_scope="session")
async def page(
    home: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, browsers: Browsers
) -> AsyncIterator[Page]:
    monkeypatch.setenv("ROOST_WEB__PORT", "0")
    monkeypatch.setenv("ROOST_WEB__TOKEN", TOKEN)
    settings = load_settings()
    model = EchoModel()
    roost = await build(settings, backend=model, audit=MemoryAudit(), clock=clock)
    launched = web_channel(settings, roost, {})
    await launched.channel.start()
    assert launched.port is not None
    base = f"http://127.0.0.1:{launched.port()}"
    browser = await browsers.launch(ARGS)
    context = await browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    try:
        tab = await context.new_page()
        tab.set_default_timeout(HANG_S * 1000)
        await tab.goto(f"{base}/#token={TOKEN}")
        await tab.locator("#composer").wait_for(state="visible")
        yield Page(tab, roost, model, base)
    finally:
        await context.close()
    await launched.channel.stop()
    await roost.aclose()


async def rich_markdown(page: Page) -> None:
    """Skip unless the daemon serves the vendored Markdown modules."""
    await page.need("GET", "/static/vendor/marked.js", why="web.py serving js/vendor/")
    # (locators, not wait_for_function: the page's CSP forbids the eval it uses)
    await page.tab.locator("html[data-renderer=rich]").wait_for(state="attached")


async def test_our_disabled_features_keep_playwrights(browsers: Browsers) -> None:
    """Chromium keeps the last --disable-features only: ours must hold Playwright's too
    (a Playwright upgrade that turns off more fails here, naming what to add)."""
    browser = await browsers.launch(ARGS)
    context = await browser.new_context()
    try:
        tab = await context.new_page()
        await tab.goto("chrome://version")
        line = await tab.locator("#command_line").inner_text()
    finally:
        await context.close()
    lists = [
        w.split("=", 1)[1].split(",") for w in line.split() if w.startswith("--disable-features=")
    ]
    assert len(lists) >= 2, line  # Playwright's, then ours
    assert lists[-1] == PLAYWRIGHT_OFF + OMNIBOX_POPUP + SPARE_RENDERER
    missing = {f for given in lists[:-1] for f in given} - set(lists[-1]) - NOT_ON_LINUX
    assert not missing, f"add to PLAYWRIGHT_OFF: {sorted(missing)}"


async def test_type_a_message_and_see_the_answer(page: Page) -> None:
    tab = page.tab
    assert "#token" not in tab.url  # the token leaves the address bar
    answer = await page.send("hi there")
    assert await answer.locator("strong").inner_text() == "roost"
    assert await answer.locator("code").inner_text() == "code"
    assert "<b>no html</b>" in await answer.inner_text()  # shown as text, not markup
    assert await tab.locator(".msg.user .body").first.inner_text() == "hi there"
    assert [
        m.content for m in page.model.requests[0].messages if not m.content.startswith("[Now: ")
    ] == ["hi there"]


async def test_slash_command_hints_and_replies(page: Page) -> None:
    tab = page.tab
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


async def test_every_command_is_hinted_and_listed_on_the_welcome(page: Page) -> None:
    tab = page.tab
    names = [c["name"] for c in page.roost.command_list()]
    assert len(names) > 8
    await tab.locator("#welcome-commands li").nth(len(names) - 1).wait_for()
    listed = await tab.locator("#welcome-commands code").all_inner_texts()
    assert [u.split()[0] for u in listed] == [f"/{n}" for n in names]
    await tab.fill("#input", "/")
    await tab.locator("#hints").wait_for(state="visible")
    assert await tab.locator("#hints li").count() == len(names)


async def test_an_example_prompt_sends_and_the_welcome_goes(page: Page) -> None:
    tab = page.tab
    assert await tab.locator("#welcome").is_visible()
    await tab.locator("button.example").first.click()
    await tab.locator(".msg.assistant.status-done").first.wait_for()
    assert await tab.locator("#welcome").is_hidden()
    assert "remember" in await tab.locator(".msg.user .body").first.inner_text()


async def test_wrong_token_asks_for_one(page: Page) -> None:
    tab = page.tab
    await tab.evaluate("localStorage.clear()")
    # (an open page keeps the token it signed in with: loaded afresh, it has none)
    await tab.goto(f"{page.base}/")
    await tab.locator("#token-view").wait_for(state="visible")
    # Same page, new fragment: no reload, the open page reads the link (hashchange).
    await tab.goto(f"{page.base}/#token=wrong-token")
    await tab.locator("#token-view").wait_for(state="visible")
    assert "refused" in await tab.inner_text("#token-message")
    await tab.fill("#token-input", TOKEN)
    await tab.press("#token-input", "Enter")
    await tab.locator("#composer").wait_for(state="visible")


async def test_a_token_link_pasted_into_the_open_page_signs_in(page: Page) -> None:
    tab = page.tab
    await tab.evaluate("localStorage.clear()")
    await tab.goto(f"{page.base}/?chat=other")
    await tab.locator("#token-view").wait_for(state="visible")
    await tab.goto(f"{page.base}/?chat=other#token={TOKEN}")  # as if pasted: no reload
    await tab.locator("#composer").wait_for(state="visible")
    assert "#token" not in tab.url
    assert await tab.evaluate("localStorage.getItem('roost.token')") == TOKEN
    assert "Hello" in await (await page.send("hello")).inner_text()


async def test_theme_switch_is_remembered(page: Page) -> None:
    tab = page.tab
    await tab.emulate_media(color_scheme="light")
    bg = "getComputedStyle(document.body).backgroundColor"
    system = await tab.evaluate(bg)
    await tab.click("#theme")  # system -> light
    assert await tab.evaluate("document.documentElement.dataset.theme") == "light"
    await tab.click("#theme")  # light -> dark
    assert await tab.evaluate("document.documentElement.dataset.theme") == "dark"
    dark = await tab.evaluate(bg)
    assert dark != system
    await tab.reload()
    await tab.locator("#composer").wait_for(state="visible")
    assert await tab.evaluate("document.documentElement.dataset.theme") == "dark"
    assert await tab.evaluate(bg) == dark
    await tab.click("#theme")  # dark -> system: follows the device again
    await tab.emulate_media(color_scheme="dark")
    assert await tab.evaluate("document.documentElement.dataset.theme") is None
    assert await tab.evaluate(bg) == dark


async def test_xss_corpus_does_not_execute(page: Page) -> None:
    tab = page.tab
    payloads = [p["payload"] for p in json.loads(CORPUS.read_text())["payloads"]]
    await tab.evaluate("window.__pwned = undefined")
    batch = 12
    for i in range(0, len(payloads), batch):
        body = await page.send("echo: " + "\n\n".join(payloads[i : i + batch]))
        assert await body.inner_text()  # something was shown
    # Hover and click everything a payload might have turned into a trigger.
    for link in await tab.locator(".msg .body a").all():
        await link.hover()
    found = await tab.evaluate(
        """() => {
        const bad = [];
        const banned = /^(SCRIPT|IFRAME|OBJECT|EMBED|IMG|SVG|MATH|FORM|STYLE|META|BASE|LINK)$/i;
        // the page's own icons (icons.js): an svg.icon-svg of plain shapes, made by script
        const icon = (el) => el.closest('svg.icon-svg') !== null
          && (el.matches('svg.icon-svg') || /^(path|rect|circle|g)$/.test(el.tagName));
        for (const el of document.querySelectorAll('#messages *')) {
          for (const a of el.attributes) {
            if (/^on/i.test(a.name)) bad.push(el.tagName + ' ' + a.name);
          }
          const tag = el.tagName;
          if (icon(el)) continue;
          if (banned.test(tag) || /^(VIDEO|AUDIO|TEMPLATE)$/.test(tag)) bad.push(tag);
          if (el.tagName === 'INPUT' && !(el.type === 'checkbox' && el.disabled)) {
            bad.push('INPUT ' + el.type);
          }
          const href = el.getAttribute('href');
          if (href !== null && !/^(https?:|mailto:|\\/files\\/)/i.test(href)) {
            bad.push('href ' + href);
          }
        }
        return {bad, pwned: window.__pwned === undefined ? null : String(window.__pwned)};
    }"""
    )
    assert found == {"bad": [], "pwned": None}
    # The payloads reached the page as text (the user's side shows them verbatim).
    assert "onerror" in await tab.locator(".msg.user .body").first.inner_text()


async def test_table_and_highlighted_code_with_a_copy_button(page: Page) -> None:
    await rich_markdown(page)
    tab = page.tab
    md = (
        "| planet | km |\n|---|--:|\n| Mercury | 57.9 |\n\n> quoted\n\n- [x] done\n\n"
        "```python\ndef is_palindrome(w):\n    return w == w[::-1]\n```"
    )
    body = await page.send("echo: " + md)
    assert await body.locator("table td").first.inner_text() == "Mercury"
    assert await body.locator("td[align=right]").inner_text() == "57.9"
    assert await body.locator("blockquote").inner_text() == "quoted"
    assert await body.locator("input[type=checkbox][disabled]").is_checked()
    code = body.locator("pre code.hljs.language-python")
    assert await code.locator(".hljs-keyword").first.inner_text() == "def"
    await body.locator("pre button.copy").click()
    await body.locator("pre button.copy", has_text="Copied").wait_for()
    copied = await tab.evaluate("navigator.clipboard.readText()")
    assert copied.rstrip("\n") == "def is_palindrome(w):\n    return w == w[::-1]"


async def test_favicon_is_served_as_svg(page: Page) -> None:
    await page.need("GET", "/static/favicon.svg", why="web.py serving .svg")
    response = await page.tab.request.get(f"{page.base}/static/favicon.svg")
    assert response.headers["content-type"].startswith("image/svg+xml")
    assert (await response.text()).startswith("<svg")


async def test_history_survives_a_reload_and_another_tab(page: Page) -> None:
    await page.need("GET", "/api/history?chat=default")
    tab = page.tab
    await page.send("echo: first answer")
    await tab.evaluate("sessionStorage.clear()")  # the daemon, not this tab, keeps it
    await tab.reload()
    await tab.locator(".msg.assistant .body", has_text="first answer").wait_for()
    other = await tab.context.new_page()
    await other.goto(f"{page.base}/")
    await other.locator(".msg.user .body", has_text="echo: first answer").wait_for()
    await other.locator(".msg.assistant .body", has_text="first answer").wait_for()


async def test_stop_mid_answer_then_a_new_message_answers(page: Page) -> None:
    await page.need("POST", "/api/chat/stop", {"chat": "probe"})
    tab = page.tab
    await tab.fill("#input", "endless")
    await tab.press("#input", "Enter")
    await tab.locator(".msg.assistant.status-streaming .body", has_text="and on").wait_for()
    await tab.click("#stop")
    stopped = tab.locator(".msg.assistant.status-stopped")
    await stopped.wait_for()
    assert "and on" in await stopped.locator(".body").inner_text()  # the partial is kept
    assert "Stopped" in await stopped.locator(".error").inner_text()
    # Without a stop on the daemon this answer would wait forever behind "endless".
    assert "quick" in await (await page.send("echo: quick")).inner_text()
    assert page.model.cancelled == 1


async def test_new_chat_forgets_and_old_conversations_stay_readable(page: Page) -> None:
    tab = page.tab
    await page.send("echo: old topic")
    await tab.click("#new-chat")
    await tab.locator("#welcome").wait_for(state="visible")
    assert await tab.locator(".msg").count() == 0
    await page.send("echo: new topic")
    asked = [m.content for m in page.model.requests[-1].messages if m.role == "user"]
    assert not any("old topic" in a for a in asked)  # the model starts fresh
    await page.need("GET", "/api/conversations?chat=default")
    await tab.click("#chats")
    old = tab.locator("#conversation-list button", has_text="old topic")
    await old.click()
    await tab.locator("#readonly").wait_for(state="visible")
    await tab.locator(".msg.assistant .body", has_text="old topic").wait_for()
    assert await tab.locator("#composer").is_hidden()
    await tab.click("#back")
    await tab.locator(".msg.assistant .body", has_text="new topic").wait_for()
