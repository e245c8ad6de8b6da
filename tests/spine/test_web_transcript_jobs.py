"""A chat with scheduled jobs and slash commands, reloaded in a real Chromium.

Over a real roost (the daemon's web factory) and its schedule loop. Before, the
reload drew a `/every` job's prompt under "You" with the pencil, its answer twice
(from the history and again from the outbox), every proactive post below the
newest message, and none of the commands nor their replies.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bridge.app.schedule_loop import ScheduleLoop, wall_ms
from tests.spine.browser_kit import reload, signed_in
from tests.spine.conftest import Browsers
from tests.spine.test_browser import BROWSER_TESTS, Page
from tests.waits import until

pytestmark = BROWSER_TESTS


@pytest_asyncio.fixture(loop_scope="session")
async def page(
    home: Path, monkeypatch: pytest.MonkeyPatch, browsers: Browsers
) -> AsyncIterator[Page]:
    async with signed_in(monkeypatch, browsers) as page:
        loop = ScheduleLoop(page.roost)  # runs the jobs (their posts wait in the outbox)
        loop.start()
        try:
            yield page
        finally:
            await loop.stop()


async def run_now(page: Page, kind: str) -> str:
    """Run the newest job of `kind` now; its id once its post is in the outbox."""
    jobs = await page.roost.schedule.jobs.list_jobs("local")
    job = max((j for j in jobs if j.kind == kind), key=lambda j: j.created_ms)
    db = page.roost.database
    await db.execute("UPDATE jobs SET next_run_ms = ? WHERE id = ?", (wall_ms(), job.id))
    page.roost.schedule.changed()
    posted = "SELECT COUNT(*) FROM outbox WHERE key LIKE ?"
    await until(lambda: db.fetch_value(posted, (f"job:{job.id}:%",)), "the job's post")
    return job.id


async def test_a_reload_shows_jobs_and_commands_in_time_once_each(page: Page) -> None:
    tab = page.tab
    await page.send("echo: hello")
    await page.send("/every 5m echo: cron one")
    job = await run_now(page, "turn")
    await page.send("/remind in 1h tea is ready")
    await run_now(page, "reminder")
    await page.send("echo: a newer message")

    await reload(page)
    await tab.locator(".msg.user", has_text="a newer message").wait_for()
    shown = []
    for m in await tab.locator("#messages .msg").all():
        who = (await m.locator(".who").inner_text()).strip().lower()
        body = " ".join((await m.locator(".body").inner_text()).split())
        edit = await m.get_by_role("button", name="Edit this message").count()
        shown.append((who, body, edit))
    assert shown == [
        ("you", "echo: hello", 1),
        ("roost", "hello", 0),
        ("you", "/every 5m echo: cron one", 0),
        shown[3],  # the /every confirmation (with the job's id)
        ("roost · scheduled", f"echo: cron one (job {job}) cron one", 0),  # 🔁 drawn as an icon
        ("you", "/remind in 1h tea is ready", 0),
        shown[6],  # the /remind confirmation
        ("roost · scheduled", "tea is ready", 0),  # ⏰ drawn as an icon
        ("you", "echo: a newer message", 1),
        ("roost", "a newer message", 0),
    ]
    assert job in shown[3][1] and shown[3][0] == "roost"
    assert shown[6][0] == "roost" and "tea is ready" in shown[6][1]
