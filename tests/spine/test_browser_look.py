"""How the page looks, in a real Chromium over a real roost: icons are inline SVG (no
emoji, which show as empty boxes without an emoji font), code blocks name their
language, a 390 px phone shows the whole status and placeholder, the setup banner
appears before the first message when no model is configured, and a spoken answer
plays in the page (the fake speech server of tests/fakes).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.browser_kit import opened, reload
from tests.spine.conftest import Browsers
from tests.spine.test_browser import BROWSER_TESTS, TOKEN, rich_markdown

pytestmark = BROWSER_TESTS
EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf\u25d0\u2715]")
PHONE = {"width": 390, "height": 844}


@pytest.fixture(autouse=True)
def web_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOST_WEB__PORT", "0")
    monkeypatch.setenv("ROOST_WEB__TOKEN", TOKEN)


CLIPPED = """els => els.map(e => {
  const r = e.getBoundingClientRect();
  return {id: e.id, clipped: e.scrollWidth > e.clientWidth + 1,
          outside: r.left < 0 || r.right > innerWidth + 0.5, width: r.width};
})"""
PLACEHOLDER_FITS = """box => {
  const s = getComputedStyle(box);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
  const room = box.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
  return {text: box.placeholder, need: ctx.measureText(box.placeholder).width, room};
}"""


async def test_on_a_390px_phone_the_header_and_placeholder_are_whole(browsers: Browsers) -> None:
    async with opened(browsers, viewport=PHONE) as page:
        tab = page.tab
        await tab.locator("#status", has_text="Connected").wait_for()
        header = await tab.locator(".top h1, #status, #chats, #new-chat, #theme").evaluate_all(
            CLIPPED
        )
        assert [h for h in header if h["clipped"] or h["outside"]] == []
        status = next(h for h in header if h["id"] == "status")
        assert status["width"] > 200  # a line of its own, not squeezed to nothing
        fits = await tab.locator("#input").evaluate(PLACEHOLDER_FITS)
        assert fits["need"] <= fits["room"], fits
        composer = await tab.locator("#attach, #mic, #send, #input").evaluate_all(CLIPPED)
        assert [c for c in composer if c["outside"]] == []
        # the labels stay for screen readers
        assert await tab.get_by_role("button", name="New chat").is_visible()
        assert await tab.get_by_role("button", name="Send").is_visible()


async def test_icons_are_svg_and_code_blocks_name_their_language(browsers: Browsers) -> None:
    async with opened(browsers) as page:
        tab = page.tab
        for button in ("#attach", "#mic", "#theme", "#chats", "#new-chat", "#send"):
            assert await tab.locator(f"{button} svg").count() == 1, button
        chrome = await tab.locator(".top, #composer, #drawer").evaluate_all(
            "els => els.map(e => e.textContent).join(' ')"
        )
        assert not EMOJI.search(chrome), EMOJI.findall(chrome)

        body = await page.send("echo: ⏰ Reminder set · 📎 notes.md · 🎙 heard: hi · 📷 ok")
        assert not EMOJI.search(await body.inner_text())  # drawn as icons instead
        labels = await body.locator("svg[role=img]").evaluate_all(
            "els => els.map(e => e.getAttribute('aria-label'))"
        )
        assert labels == ["reminder", "file", "voice", "photo"]
        assert "Reminder set" in await body.inner_text()

        await rich_markdown(page)
        code = await page.send("code")
        langs = await code.locator("pre .code-lang").all_inner_texts()
        assert langs == ["Python", "text"]
        await code.locator("pre .copy").first.click()
        await code.locator("pre .copy", has_text="Copied").wait_for()
        assert (await tab.evaluate("navigator.clipboard.readText()")).strip() == "print('hi')"


async def test_without_a_model_the_page_says_so_before_the_first_message(
    browsers: Browsers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("ROOST_LLM__BASE_URL", "ROOST_LLM__API_KEY", "ROOST_LLM__PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    async with opened(browsers, offline=True) as page:
        tab = page.tab
        banner = tab.locator("#setup")
        await banner.wait_for(state="visible")
        assert await tab.locator(".msg").count() == 0  # before anything was asked
        toml = await banner.locator("pre code#setup-toml").inner_text()
        assert toml.startswith("[llm]\nbase_url = ") and 'model = "' in toml
        assert "ROOST_LLM__BASE_URL" in await banner.locator("#setup-env").inner_text()

        await page.send("hello")  # the offline answer: not stored, reloaded as a failed turn
        await reload(page)
        error = tab.locator(".msg.status-failed.assistant .error > span")
        await error.wait_for(state="visible")
        said = await error.inner_text()  # its lines kept: the TOML can be copied as it is
        assert said.startswith("No model is configured") and "\n[llm]\nbase_url = " in said


async def test_a_spoken_answer_plays_in_the_page(browsers: Browsers) -> None:
    key = "sk-speech-0123456789"
    async with FakeOpenAI(api_key=key) as speech:
        config = {"llm": {"speech": {"base_url": speech.base_url, "api_key": key}}}
        async with opened(browsers, config=config) as page:
            tab = page.tab
            on = await page.send("/voice on")
            assert "the page plays each one" in await on.inner_text()
            await page.send("echo: good morning")
            player = tab.locator(".msg.assistant").last.locator(".speech")
            await tab.locator(".msg.assistant .speech[data-ready=true]").wait_for()
            audio = player.locator("audio")
            assert (await audio.get_attribute("src") or "").startswith("blob:")
            duration = await audio.evaluate(
                """a => new Promise((ok, no) => {
                  if (a.readyState >= 1) return ok(a.duration);
                  a.addEventListener('loadedmetadata', () => ok(a.duration));
                  a.addEventListener('error', () => no(String(a.error && a.error.code)));
                })"""
            )
            assert duration > 0
            [asked] = speech.audio.of("speech")
            assert asked.fields["input"] == "good morning"
