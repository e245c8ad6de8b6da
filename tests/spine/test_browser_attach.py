"""Files on the web page in a real headless Chromium: pick, paste, drop, record, send.

The page is the real one, served by the real web channel over a real roost
(the scripted `EchoModel` of test_browser.py); a recorder around the core's
`handle` shows the `Inbound` each message became. Chromium runs with its
fake microphone (`--use-fake-device-for-media-stream`, a beep) and grants
it without asking (`--use-fake-ui-for-media-stream`), flags of test_browser.py's
ARGS, which every browser test shares: MediaRecorder records for real. Skipped
without Chromium, as test_browser.py.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bridge.app.build import Roost, build
from bridge.channels.web.channel import WebChannel
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import Clock
from tests.spine.conftest import Browsers
from tests.spine.test_browser import ARGS, BROWSER_TESTS, TOKEN, EchoModel
from tests.spine.test_web_upload import png, recorder
from tests.waits import HANG_S

pytestmark = BROWSER_TESTS

# Build a File in the page and hand it over as a paste (ClipboardEvent) or a drop (DragEvent).
GIVE = """([how, name, type, b64]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const dt = new DataTransfer();
  dt.items.add(new File([bytes], name, { type }));
  const target = how === "paste" ? document.getElementById("input") : document.body;
  const ev = how === "paste"
    ? new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true })
    : new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true });
  target.dispatchEvent(ev);
  return ev.defaultPrevented;
}"""


def read(path: str) -> bytes:
    return Path(path).read_bytes()


@dataclass
class AttachPage:
    tab: Any
    roost: Roost
    inbounds: list[Inbound]
    inbox: Path

    async def give(self, how: str, name: str, mime: str, data: bytes) -> bool:
        b64 = base64.b64encode(data).decode()
        taken: bool = await self.tab.evaluate(GIVE, [how, name, mime, b64])
        return taken

    async def send(self, text: str) -> str:
        done = self.tab.locator(".msg.assistant.status-done")
        before = await done.count()
        await self.tab.fill("#input", text)
        await self.tab.press("#input", "Enter")
        await done.nth(before).wait_for()
        body: str = await done.nth(before).locator(".body").inner_text()
        return body


@pytest_asyncio.fixture(loop_scope="session")
async def page(
    home: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, browsers: Browsers
) -> AsyncIterator[AttachPage]:
    monkeypatch.setenv("ROOST_LLM__VISION", "true")  # the echo model "sees" the pasted image
    monkeypatch.setenv("ROOST_LLM__TRANSCRIBE__KEEP_AUDIO", "true")  # the test reads the note
    settings = load_settings()
    roost = await build(settings, backend=EchoModel(), audit=MemoryAudit(), clock=clock)
    seen: list[Inbound] = []
    web = WebChannel(
        recorder(roost.core.handle, seen),
        roost.command_list,
        TOKEN,
        port=0,
        turns=roost.core.running,
        archive=roost.sessions.archive,
        inbox=lambda tenant: TenantDirs.of(home, tenant).inbox,
        attachment_bytes=settings.limits.attachment_bytes,
    )
    await web.start()
    browser = await browsers.launch(ARGS)
    context = await browser.new_context(permissions=["microphone"])
    try:
        tab = await context.new_page()
        tab.set_default_timeout(HANG_S * 1000)
        await tab.goto(f"http://127.0.0.1:{web.port}/#token={TOKEN}")
        await tab.locator("#composer").wait_for(state="visible")
        yield AttachPage(tab, roost, seen, TenantDirs.of(home, "local").inbox)
    finally:
        await context.close()
    await web.stop()
    await roost.aclose()


async def test_pick_paste_and_drop_files_see_chips_and_send_them(page: AttachPage) -> None:
    tab = page.tab
    image = png(3, 2)
    await tab.set_input_files(
        "#file-input", files=[{"name": "notes.md", "mimeType": "text/markdown", "buffer": b"# a\n"}]
    )
    assert await page.give("paste", "", "image/png", image)  # a screenshot has no name
    assert await page.give("drop", "table.csv", "text/csv", b"a,b\n1,2\n")
    assert await page.give("drop", "junk.txt", "text/plain", b"remove me")
    chips = tab.locator("#chips .chip")
    await chips.nth(3).wait_for()
    names = await tab.locator("#chips .chip-name").all_inner_texts()
    assert names == ["notes.md", "pasted image.png", "table.csv", "junk.txt"]
    assert await chips.nth(0).locator("svg.icon-file").count() == 1  # an icon, not an emoji
    thumb = chips.nth(1).locator("canvas.thumb")  # the image: its thumbnail
    await thumb.wait_for()
    assert await thumb.evaluate("c => [c.width, c.height]") == [3, 2]
    assert await chips.nth(1).locator("small").inner_text() == f"{len(image)} B"
    await tab.get_by_role("button", name="Remove junk.txt").click()
    await chips.nth(3).wait_for(state="detached")

    await page.send("echo: got them")
    # through the senses pipeline: the documents' text and the image reach the model
    model = page.roost.backend
    assert isinstance(model, EchoModel)
    last_user = [m for m in model.requests[-1].messages if m.role == "user"][-1]
    assert "echo: got them" in last_user.content and "a,b" in last_user.content
    assert len(last_user.images) == 1
    await tab.locator("#chips").wait_for(state="hidden")  # sent: the chips go
    asked = tab.locator(".msg.user").last
    assert await asked.locator(".body").inner_text() == "echo: got them"  # as typed
    sent = await asked.locator(".sent-files .chip-name").all_inner_texts()
    assert sent == ["notes.md", "pasted image.png", "table.csv"]
    await asked.locator(".sent-files canvas.thumb").wait_for()  # the image, drawn small
    (inbound,) = page.inbounds
    assert inbound.text == "echo: got them"
    got = [(a.kind, a.mime, a.name) for a in inbound.attachments]
    assert got == [
        ("document", "text/markdown", "notes.md"),
        ("photo", "image/png", "pasted image.png"),
        ("document", "text/csv", "table.csv"),
    ]
    assert read(inbound.attachments[1].path) == image
    assert sorted(p.suffix for p in page.inbox.iterdir()) == [".csv", ".md", ".png"]


async def test_a_refused_file_is_named_and_the_message_waits(page: AttachPage) -> None:
    tab = page.tab
    await page.give("drop", "setup.exe", "application/octet-stream", b"MZ\x90\x00" + bytes(64))
    await tab.fill("#input", "install this")
    await tab.press("#input", "Enter")
    status = tab.locator("#status")
    await tab.locator("#status[data-tone=error]").wait_for()
    assert "setup.exe" in await status.inner_text()
    assert "cannot read this kind of file" in await status.inner_text()
    assert await tab.input_value("#input") == "install this"
    assert page.inbounds == [] and list(page.inbox.iterdir()) == []


async def test_record_a_voice_note_and_send_it(page: AttachPage) -> None:
    tab = page.tab
    mic = tab.locator("#mic")
    await mic.wait_for(state="visible")
    await mic.click()
    await tab.locator("#mic[aria-pressed=true]").wait_for()
    await tab.locator("#mic", has_text="0:01").wait_for()  # the time shows while it records
    await mic.click()
    chip = tab.locator("#chips .chip.voice")
    await chip.wait_for()
    assert (await chip.locator(".chip-name").inner_text()).startswith("voice ")
    assert await chip.locator("svg.icon-mic").count() == 1
    assert await tab.locator("#mic[aria-pressed=false]").count() == 1

    await page.send("listen")
    (inbound,) = page.inbounds
    (voice,) = inbound.attachments
    assert (voice.kind, voice.mime) == ("voice", "audio/webm")
    data = read(voice.path)
    assert data.startswith(b"\x1a\x45\xdf\xa3") and b"webm" in data[:64]
    assert voice.size == len(data) > 1000  # a second of Opus, not an empty container
