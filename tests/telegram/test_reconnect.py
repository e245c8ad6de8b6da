"""A failing Telegram never takes the daemon down: the real `roost serve` as a process.

The Bot API is first down (nothing listens on its port), then a fake one
comes up there: systemd hears READY=1 while Telegram is down, the web page
answers /healthz and a chat turn the whole time, /status says "telegram:
reconnecting, last error …, next try in …", and once the fake is up
Telegram answers. With a revoked token (every call 401) the daemon keeps
running, says why in /status and logs it once, however often it retries.
"""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.telegram.conftest import ALICE, TOKEN, env_for
from tests.telegram.fake_bot_api import Failure, FakeBotAPI
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main"]
KEY = "sk-test-key-000000000000"


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, models=["m1"]) as server:
        yield server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Daemon:
    def __init__(self, proc: asyncio.subprocess.Process, home: Path) -> None:
        self.proc, self.home = proc, home
        self.out: list[str] = []
        self.port = 0

    async def started(self) -> None:
        """Read stdout up to the "model" line (every channel has said how it is)."""
        assert self.proc.stdout is not None
        while True:
            line = (await asyncio.wait_for(self.proc.stdout.readline(), HANG_S)).decode()
            if not line:  # exited: say why (its stderr), not only what it printed
                assert self.proc.stderr is not None
                err = (await asyncio.wait_for(self.proc.stderr.read(), HANG_S)).decode()
                raise AssertionError("the daemon exited: " + "".join(self.out) + err)
            self.out.append(line)
            found = re.search(r"web chat at http://127\.0\.0\.1:(\d+)/", line)
            if found:
                self.port = int(found.group(1))
            if line.startswith("roost: model"):
                return

    async def chat(self, text: str) -> str:
        token = (self.home / "web-token").read_text().strip()
        async with aiohttp.ClientSession(f"http://127.0.0.1:{self.port}") as http:
            health = await http.get("/healthz")
            assert health.status == 200
            r = await http.post(
                "/api/chat", json={"text": text}, headers={"Authorization": f"Bearer {token}"}
            )
            assert r.status == 200
            return str((await r.json())["reply"])

    async def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(self.proc.communicate(), HANG_S)
        assert self.proc.returncode == 0, err.decode()
        return "".join(self.out) + out.decode() + err.decode()


@pytest.fixture
async def launch(home: Path, model: FakeOpenAI) -> AsyncIterator[object]:
    daemons: list[Daemon] = []

    async def start(base_url: str, **extra: str) -> Daemon:
        env = env_for(home, TOKEN, base_url, **extra)
        env.update(
            ROOST_LLM__PROVIDER="openai",
            ROOST_LLM__BASE_URL=model.base_url,
            ROOST_LLM__API_KEY=KEY,
            ROOST_LLM__MODEL="m1",
            ROOST_LOG_LEVEL="INFO",
            ROOST_TELEGRAM__RECONNECT_FIRST_S="0.05",  # retries after 0.05, 0.1, 0.2 s, ...
        )
        proc = await asyncio.create_subprocess_exec(
            *ROOST,
            "serve",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        daemon = Daemon(proc, home)
        daemons.append(daemon)
        await daemon.started()
        return daemon

    yield start
    for daemon in daemons:
        if daemon.proc.returncode is None:
            daemon.proc.kill()
            await daemon.proc.wait()


async def notify_listener(tmp_path: Path) -> tuple[socket.socket, str]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    where = str(tmp_path / "notify.sock")
    sock.bind(where)
    sock.setblocking(False)
    return sock, where


async def next_notice(sock: socket.socket) -> dict[str, str]:
    data = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(sock, 4096), HANG_S)
    return dict(line.split("=", 1) for line in data.decode().splitlines())


async def test_the_web_page_answers_while_telegram_is_down_then_telegram_comes_up(
    launch: object, tmp_path: Path
) -> None:
    port = free_port()  # nobody listens here yet: the Bot API is down
    sock, where = await notify_listener(tmp_path)
    try:
        daemon = await launch(f"http://127.0.0.1:{port}/bot", NOTIFY_SOCKET=where)  # type: ignore[operator]
        ready = await next_notice(sock)
        assert ready["READY"] == "1"
        assert "telegram: reconnecting, last error: the Bot API is unreachable" in ready["STATUS"]
    finally:
        sock.close()
    assert any(line.startswith("roost: telegram: reconnecting") for line in daemon.out)
    assert await daemon.chat("hello while telegram is down") == "echo: hello while telegram is down"
    status = await daemon.chat("/status")
    assert re.search(
        r"telegram: reconnecting, last error: the Bot API is unreachable or failing \(.+\); "
        r"check the network and ROOST_TELEGRAM__API_BASE_URL; next try in \d+s",
        status,
    ), status

    async with FakeBotAPI(TOKEN, max_poll_s=2.0, port=port) as fake:  # the Bot API comes up
        await fake.wait_call("getUpdates", limit_s=HANG_S)
        fake.push_text(ALICE, "hello bot")
        # under load the answer may show as a draft first and be edited to its final text
        await fake.wait_until(
            lambda: [m.text for m in fake.sent_to(ALICE)] == ["echo: hello bot"], limit_s=HANG_S
        )
        assert await daemon.chat("and the web?") == "echo: and the web?"
        assert "telegram: up (@roost_test_bot, polling)" in await daemon.chat("/status")
        logs = await daemon.stop()
    assert logs.count("telegram: the Bot API is unreachable or failing") == 1, logs
    assert "telegram: connected again (@roost_test_bot, polling)" in logs
    assert TOKEN not in logs and TOKEN.split(":")[1] not in logs


async def test_a_revoked_token_keeps_the_daemon_running_and_says_why(launch: object) -> None:
    async with FakeBotAPI(TOKEN) as fake:
        fake.fail("getMe", *[Failure.unauthorized()] * 100)  # the token was revoked
        daemon = await launch(fake.base_url)  # type: ignore[operator]
        assert await daemon.chat("still here?") == "echo: still here?"
        await fake.wait_until(lambda: len(fake.calls_of("getMe")) >= 3, limit_s=HANG_S)
        status = await daemon.chat("/status")
        assert "telegram: reconnecting, last error: Telegram refused the bot token (401" in status
        assert "ROOST_TELEGRAM__TOKEN" in status and re.search(r"next try in \d+", status)
        logs = await daemon.stop()
    assert logs.count("Telegram refused the bot token") == 2, logs  # the warning + stdout line
    assert TOKEN not in logs and TOKEN.split(":")[1] not in logs
