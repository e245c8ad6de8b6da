"""Jobs of a web tenant signed in with its own token run, through the real web channel.

`[tenants.alice] web_token` signs the page in as alice (identity `tenant:alice`);
her `/every` tool job and prompt job must run as her (not be skipped as "the
chat no longer belongs to the job's tenant"), with the arguments given when the
job was made, and arrive on her page's event stream. An in-process roost, the
real web channel on 127.0.0.1, the real `ScheduleLoop` and the real sandbox.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bridge.app.build import Roost, build
from bridge.app.schedule_loop import ScheduleLoop, wall_ms
from bridge.channels.web.channel import WebChannel
from bridge.core.config import Settings, load_settings
from bridge.schedule.commands import preview
from bridge.types.audit_sink import MemoryAudit
from forge.library import ToolLibrary, build_spec
from tests.conftest import ScriptedBackend
from tests.schedule.test_e2e_web import events
from tests.waits import HANG_S

LOCAL, ALICE = "local-token-0123456789", "alice-token-0123456789"
WEATHER = (
    'def run(city: str, days: int = 1) -> str:\n    """Weather."""\n    return f"{city} x{days}"\n'
)


@pytest.fixture
def alice_settings(home: Path) -> Settings:
    Path(os.environ["ROOST_CONFIG"]).write_text(f'[tenants.alice]\nweb_token = "{ALICE}"\n')
    return load_settings()


@pytest.fixture
async def alice_roost(alice_settings: Settings) -> AsyncIterator[Roost]:
    roost = await build(alice_settings, backend=ScriptedBackend("it is sunny"), audit=MemoryAudit())
    made = build_spec("weather", "the weather", WEATHER)
    assert made.tool is not None, made.findings
    ToolLibrary(roost.tenant_dirs("alice").tools, wall_ms).save(made.tool)
    yield roost
    await roost.aclose()


async def test_a_web_tenants_tool_and_prompt_jobs_run_as_her(alice_roost: Roost) -> None:
    roost = alice_roost
    web = WebChannel(
        roost.core.handle, roost.command_list, LOCAL, "127.0.0.1", 0,
        tenant_tokens={ALICE: "alice"},
    )  # fmt: skip
    loop = ScheduleLoop(roost)
    await web.start()
    loop.deliveries.add("web", web.deliver)
    loop.start()
    auth = {"Authorization": f"Bearer {ALICE}"}
    root = f"http://127.0.0.1:{web.port}"
    try:
        async with aiohttp.ClientSession() as http:

            async def say(text: str) -> str:
                body = {"text": text, "chat": "c1"}
                async with http.post(f"{root}/api/chat", json=body, headers=auth) as r:
                    return str((await r.json())["reply"])

            assert "missing argument 'city'" in await say("/every 1h me.weather")
            assert 'me.weather city="Oslo" days=2' in await say(
                "/every 1h me.weather city=Oslo days=2 always"
            )
            assert "I'll answer" in await say("/every 2h what is the weather")
            jobs = await roost.schedule.jobs.list_jobs("alice")
            assert {j.kind for j in jobs} == {"tool", "turn"}
            async with http.get(f"{root}/api/events?chat=c1", headers=auth) as response:
                stream = events(response)
                assert (await asyncio.wait_for(anext(stream), HANG_S))[0] == "ready"
                for job in jobs:  # their time has come
                    await roost.database.execute(
                        "UPDATE jobs SET next_run_ms = ? WHERE id = ?", (wall_ms(), job.id)
                    )
                roost.schedule.changed()
                got: list[dict[str, Any]] = []
                while len(got) < 2:
                    name, data = await asyncio.wait_for(anext(stream), HANG_S)  # hang guard
                    if name == "message":
                        got.append(data)
    finally:
        await loop.stop()
        await web.stop()
    heads = {j.kind: f"🔁 {preview(j)} (job {j.id})\n" for j in jobs}  # each names its job
    assert sorted(m["text"] for m in got) == sorted(
        [heads["turn"] + "it is sunny", heads["tool"] + 'me.weather: "Oslo x2"']
    )
    for job in await roost.schedule.jobs.list_jobs("alice"):
        assert job.last_error in ("", None), job.last_error
    assert json.loads(next(j for j in jobs if j.kind == "tool").payload)["args"] == {
        "city": "Oslo",
        "days": 2,
    }
