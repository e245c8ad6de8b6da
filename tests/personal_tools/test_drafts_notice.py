"""A tool the forge refuses is shown to the person, over the real channels.

The web API (JSON and the event stream, on a TCP socket on 127.0.0.1) and
Telegram (the real python-telegram-bot against the fake Bot API) both end
the reply with the notice, while the model still gets every finding.
"""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp

from bridge.app.build import build
from bridge.channels.web.channel import WebChannel
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, ScriptedBackend
from tests.spine.test_web import read_sse
from tests.telegram.conftest import ALICE, running, tg_settings
from tests.telegram.conftest import TOKEN as BOT_TOKEN
from tests.telegram.fake_bot_api import FakeBotAPI

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# two problems, the way models write them: a socket, and a subprocess call
BROKEN = (
    "import socket\nimport subprocess\n\n"
    'def run(host: str) -> str:\n    """Ping a host."""\n'
    '    return subprocess.run(["ping", host]).stdout\n'
)
FORGE = ("forge_create", json.dumps({"name": "pinger", "description": "", "source": BROKEN}))


def findings_sent(backend: ScriptedBackend) -> str:
    return [m.content for m in backend.requests[-1].messages if m.role == "tool"][-1]


def assert_notice(text: str) -> None:
    notice = text.split("\n\n")[-1]
    assert notice.startswith("🔧 me.pinger was not accepted: 2 problems (line 1: "), notice
    assert "socket" in notice and notice.endswith(" …)")


async def test_web_api_reply_carries_the_notice(settings: Settings, clock: Clock) -> None:
    backend = ScriptedBackend([FORGE], "Sorry, that did not work.", [FORGE], "Again no.")
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    web = WebChannel(roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0)
    await web.start()
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as http:
            async with http.post("/api/chat", json={"text": "ping tool"}, headers=AUTH) as r:
                body = await r.json()
            assert body["reply"].startswith("Sorry, that did not work.\n\n")
            assert_notice(body["reply"])
            found = findings_sent(backend)
            assert "line 1, col 0" in found and "line 2, col 0" in found
            async with http.post("/api/chat/stream", json={"text": "again"}, headers=AUTH) as r:
                events = await read_sse(r)
            deltas = "".join(d["text"] for e, d in events if e == "delta")
            final = events[-1][1]["text"]
            assert_notice(final)
            assert deltas == final  # the streamed page shows it too
    finally:
        await web.stop()
        await roost.aclose()
    rejected = [e[2] for e in roost.audit.events if e[0] == "tool.created"]
    assert [r["outcome"] for r in rejected] == ["rejected", "rejected"]


async def test_telegram_reply_carries_the_notice(home: Path) -> None:
    backend = ScriptedBackend([FORGE], "Sorry, that did not work.")
    async with (
        FakeBotAPI(BOT_TOKEN, max_poll_s=2.0) as fake,
        running(tg_settings(home, fake), fake, backend),
    ):
        fake.push_text(ALICE, "write me a ping tool")
        await fake.wait_until(lambda: any("not accepted" in m.text for m in fake.sent_to(ALICE)))
    texts = [m.text for m in fake.sent_to(ALICE)]
    reply = next(t for t in texts if "not accepted" in t)
    assert reply.startswith("Sorry, that did not work.")
    assert_notice(reply)
