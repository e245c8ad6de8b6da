"""kill -9 the real daemon while it answers under load: nothing acknowledged is lost.

Every answered HTTP request had its turn's audit batch fsynced before the
reply was sent, so after a restart the chain must verify and hold at least
one `message.answered` per reply the clients received.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import aiohttp

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import ROOST, env_for, start_daemon
from tests.waits import HANG_S


async def test_kill_9_under_load_then_restart(home: Path) -> None:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as fake:
        env = env_for(home, fake)
        daemon = await start_daemon(env)
        token = (home / "web-token").read_text().strip()
        auth = {"Authorization": f"Bearer {token}"}
        answered = 0
        stop = asyncio.Event()

        async def client(http: aiohttp.ClientSession, i: int) -> None:
            nonlocal answered
            n = 0
            while not stop.is_set():
                try:
                    r = await http.post(
                        "/api/chat", json={"text": f"hi {n}", "chat": f"k{i}"}, headers=auth
                    )
                    body = await r.json()
                except (aiohttp.ClientError, json.JSONDecodeError):
                    return
                if body.get("kind") == "answer":
                    answered += 1
                n += 1

        async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
            clients = [asyncio.ensure_future(client(http, i)) for i in range(20)]
            async with asyncio.timeout(HANG_S):  # only a guard against a hang
                while answered < 60:
                    await asyncio.sleep(0.02)
            daemon.proc.send_signal(signal.SIGKILL)
            await daemon.proc.wait()
            stop.set()
            await asyncio.gather(*clients)

        daemon = await start_daemon(env)  # start-up repairs a torn last line, if any
        code, _ = await daemon.stop()
        assert code == 0

    proc = await asyncio.create_subprocess_exec(
        *ROOST, "audit", "verify", env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out.decode()
    lines = (home / "audit" / "chain.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert sum(r["event"] == "message.answered" for r in records) >= answered
    assert answered >= 60
