"""Models reloaded live: the real daemon as a subprocess, two fake OpenAI servers.

`roost serve` starts with only the default model. The config file gains
`[models.smart]` on a second server; after SIGHUP `/model smart` switches a
chat and its next answer comes from the second server, while a turn that was
already running on the old default backend finishes on it. Removing the model
again sends that chat back to the default, with a notice once.
"""

from __future__ import annotations

import asyncio
import inspect
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.fakes.fake_openai import FakeOpenAI, Response, last_user_text
from tests.models.conftest import KEY_B, write_config
from tests.spine.test_daemon import env_for, start_daemon
from tests.waits import HANG_S

WAIT_S = HANG_S  # a safety net against a hung run, not a speed check


class Gated(FakeOpenAI):
    """A message "slow" is answered only once `gate` is set."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.gate = asyncio.Event()

    async def _respond(
        self, request: web.Request, body: dict[str, Any], response: Response
    ) -> web.StreamResponse:
        if last_user_text(body) == "slow":
            await self.gate.wait()
        return await super()._respond(request, body, response)


@pytest.fixture
async def fake() -> AsyncIterator[Gated]:
    async with Gated(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


@pytest.fixture
async def second() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY_B, models=["big-2"]) as server:
        yield server


def smart(second: FakeOpenAI) -> str:
    return f'[models.smart]\nbase_url = "{second.base_url}"\napi_key = "{KEY_B}"\nmodel = "big-2"\n'


async def until(check: Callable[[], Awaitable[bool] | bool]) -> None:
    """Poll `check` (sync or async) until it holds."""
    async with asyncio.timeout(WAIT_S):
        while True:
            result = check()
            if await result if inspect.isawaitable(result) else result:
                return
            await asyncio.sleep(0.05)


async def test_sighup_adds_a_model_a_chat_switches_to_it_and_a_running_turn_keeps_its_own(
    home: Path, fake: Gated, second: FakeOpenAI
) -> None:
    # not blank: env_for would add tenants alice and bob, and a reload to a file without
    # them all is refused (tests/spine/test_reload_no_tenant.py)
    write_config("# the local tenant only\n")
    daemon = await start_daemon(env_for(home, fake))
    token = (home / "web-token").read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:

            async def say(text: str, chat: str = "b") -> str:
                r = await http.post("/api/chat", json={"text": text, "chat": chat}, headers=auth)
                return str((await r.json())["reply"])

            assert "There is no model 'smart'" in await say("/model smart")
            slow = asyncio.ensure_future(say("slow", chat="a"))
            await until(lambda: bool(fake.requests))
            write_config(smart(second))
            daemon.proc.send_signal(signal.SIGHUP)
            await until(lambda: shows(say("/model"), "smart — openai model=big-2"))
            assert "This chat now uses smart" in await say("/model smart")
            assert await say("hello") == "echo: hello"
            assert [last_user_text(b) for b in second.requests] == ["hello"]
            fake.gate.set()
            assert await slow == "echo: slow"  # finished on the backend it started with
            assert "Model: openai model=big-2 (named smart)" in await say("/status")

            write_config("# no named models: a blank file is refused on reload\n")
            daemon.proc.send_signal(signal.SIGHUP)
            await until(lambda: shows(say("/model", chat="c"), "smart", False))
            told = await say("still there?")
            assert told.startswith("echo: still there?")
            assert "The model 'smart' this chat used is no longer configured" in told
            assert await say("and now") == "echo: and now"
            assert [last_user_text(b) for b in second.requests] == ["hello"]
    finally:
        code, stderr = await daemon.stop()
    assert code == 0, stderr
    assert "reload: changed but applied only after a restart: models" not in stderr
    assert KEY_B not in stderr and "ERROR" not in stderr


async def shows(reply: Awaitable[str], text: str, wanted: bool = True) -> bool:
    return (text in await reply) == wanted
