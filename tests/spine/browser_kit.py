"""What the newer browser tests share: a scripted model and a page over a real roost.

`ScriptedModel` answers by what it is asked (see its docstring), so one page can
show tool cards, failures, endless answers, code and icons. `opened(...)` builds
a roost the way `roost serve` does (`web_channel`), starts Debian's Chromium
through Playwright and yields a `Page` signed in with the web token. Chromium
missing: the tests skip (or fail under ROOST_REQUIRE_BROWSER=1), as in
test_browser.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import build
from bridge.app.channels_up import web_channel
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import (
    Backend,
    BackendError,
    Finish,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallRequest,
)
from forge.library import ToolLibrary, build_spec
from tests.spine.conftest import Browsers
from tests.spine.test_browser import ARGS, TOKEN, EchoModel, Page

WORDCOUNT = '''
def run(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())
'''
FAILED = "The model server cannot be reached right now (ref t1)."
CODE = "Here:\n\n```python\nprint('hi')\n```\n\nand\n\n```\nplain text\n```"


class ScriptedModel(EchoModel):
    """EchoModel, plus: "count: T" calls the saved tool me.wordcount on T, then says how
    many words; "fail" fails as an unreachable server does; "joke" tells joke number n
    (n counts the jokes told); "code" answers with a python and a plain code block."""

    def __init__(self) -> None:
        super().__init__()
        self.jokes = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        last = request.messages[-1]
        asked = self.asked(request)
        if last.role == "tool":
            self.requests.append(request)
            yield TextDelta(f"There are {last.content} words.")
            yield Finish("stop")
            return
        if asked.startswith("count: "):
            self.requests.append(request)
            args = json.dumps({"text": asked.removeprefix("count: ")})
            yield ToolCall(ToolCallRequest("call_1", "me__wordcount", args))
            yield Finish("tool_calls")
            return
        if asked == "fail":
            self.requests.append(request)
            raise BackendError("unavailable", FAILED)
        if asked in ("joke", "code"):
            self.requests.append(request)
            self.jokes += asked == "joke"
            yield TextDelta(f"Joke number {self.jokes}." if asked == "joke" else CODE)
            yield Finish("stop")
            return
        async for event in super().stream(request):
            yield event


def save_wordcount(home: Path, tenant: str = "local") -> None:
    spec = build_spec("wordcount", "Count the words of a text.", WORDCOUNT).tool
    assert spec is not None
    library = ToolLibrary(home / "tenants" / tenant / "global" / "forge" / "tools", lambda: 0)
    library.prepare()
    library.save(spec)


@asynccontextmanager
async def opened(
    browsers: Browsers,
    config: dict[str, Any] | None = None,
    model: Backend | None = None,
    viewport: dict[str, int] | None = None,
    offline: bool = False,
) -> AsyncIterator[Page]:
    """A signed-in page, in a new context of the shared browser (`browsers`: the fixture
    of tests/spine/conftest.py), over a roost with `model` (default a ScriptedModel; `offline`:
    none, the settings pick the stand-in), settings from `config` (keywords of
    `load_settings`) and the
    ROOST_* variables the caller's monkeypatch set."""
    settings = load_settings(**(config or {}))
    model = None if offline else (model or ScriptedModel())
    roost = await build(settings, backend=model, audit=MemoryAudit())
    launched = web_channel(settings, roost, {})
    await launched.channel.start()
    assert launched.port is not None
    base = f"http://127.0.0.1:{launched.port()}"
    try:
        browser = await browsers.launch(ARGS)
        options: dict[str, Any] = {"permissions": ["clipboard-read", "clipboard-write"]}
        if viewport is not None:
            options |= {"viewport": viewport, "device_scale_factor": 2, "is_mobile": True}
        context = await browser.new_context(**options)
        try:
            tab = await context.new_page()
            tab.set_default_timeout(20_000)
            await tab.goto(f"{base}/#token={TOKEN}")
            await tab.locator("#composer").wait_for(state="visible")
            yield Page(tab, roost, model, base)  # type: ignore[arg-type]
        finally:
            await context.close()
    finally:
        await launched.channel.stop()
        await roost.aclose()


@asynccontextmanager
async def signed_in(monkeypatch: pytest.MonkeyPatch, browsers: Browsers) -> AsyncIterator[Page]:
    """`opened` on the web channel of a free port with the tests' token (the ROOST_*
    variables set through `monkeypatch`, with whatever the caller set before)."""
    monkeypatch.setenv("ROOST_WEB__PORT", "0")
    monkeypatch.setenv("ROOST_WEB__TOKEN", TOKEN)
    async with opened(browsers) as page:
        yield page


async def reload(page: Page) -> None:
    """Reload from the daemon only (this tab's stored transcript forgotten)."""
    await page.tab.evaluate("sessionStorage.clear()")
    await page.tab.reload()
    await page.tab.locator("#composer").wait_for(state="visible")
