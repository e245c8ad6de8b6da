"""One headless Chromium per test process, shared by the browser tests.

Launching Chromium (with Playwright's driver) costs about 2 s of CPU; each
browser test used to pay it. The `browsers` fixture launches one browser per
set of command-line flags, once per test process (each xdist worker), and
each test opens its own browser context: a context has its own cookies,
storage, permissions and pages, so tests stay as isolated as they were.
The browser tests run on the session's event loop (`loop_scope="session"`),
the loop the shared browser lives on. A browser that died is launched again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

import pytest_asyncio

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright


class Browsers:
    """Launched browsers by their flags, on one Playwright driver."""

    def __init__(self, playwright: Playwright, executable: str | None) -> None:
        self._pw = playwright
        self._executable = executable
        self._open: dict[tuple[str, ...], Browser] = {}

    async def launch(self, args: Sequence[str]) -> Browser:
        key = tuple(args)
        browser = self._open.get(key)
        if browser is None or not browser.is_connected():
            browser = await self._pw.chromium.launch(executable_path=self._executable, args=key)
            self._open[key] = browser
        return browser

    async def close(self) -> None:
        for browser in self._open.values():
            if browser.is_connected():
                await browser.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browsers() -> AsyncIterator[Browsers]:
    from playwright.async_api import async_playwright

    from tests.spine.test_browser import CHROMIUM

    async with async_playwright() as pw:
        shared = Browsers(pw, CHROMIUM)
        try:
            yield shared
        finally:
            await shared.close()
