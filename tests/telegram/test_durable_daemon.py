"""No Telegram message is lost to a kill or a restart: the real `roost serve`, killed and restarted.

Issue #21 item 9, as the red team ran it: the daemon (python-telegram-bot
22.8 inside) against the fake Bot API, answers from a fake OpenAI-compatible
model ("echo: <question>"), so every answer names its question.
- kill -9 while the final replies are being retried (every sendMessage
  fails with 502), then a restart once Telegram is back: every question is
  answered exactly once (was: 30 of 30 lost);
- SIGTERM with 30 messages queued behind Telegram's per-chat pacing, then a
  restart: every one answered exactly once, none dropped (was: 20 dropped);
- webhook mode, kill -9 right after 30 updates were answered 200 (the
  replies held at the Bot API, so none is out yet): after a restart every
  accepted update is answered exactly once (was: the queue died with it; the red
  team sent 100, but past three a chat the restart's answers only wait for the
  per-chat pacing, a second each).
"Exactly once" is checked once the daemon is idle: nothing open in the
durable inbox, nothing queued in the outbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sqlite3
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.telegram.conftest import ALICE, TOKEN
from tests.telegram.fake_bot_api import Failure, FakeBotAPI
from tests.waits import until

ROOST = [sys.executable, "-m", "bridge.cli.main"]
KEY = "sk-test-key-000000000000"
SECRET = "s3cret_webhook-token"
LIMIT_S = 180.0  # a hang guard for a busy machine, never a speed check
PEOPLE = [ALICE + n for n in range(10)]  # ten chats of one tenant
WEBHOOK_UPDATES = 30  # three a chat: within the per-chat burst (SendPolicy.chat_burst)


class Daemon:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.port = 0
        self.out: list[str] = []

    async def started(self) -> None:
        """Read stdout up to the "model" line (every channel is up or said why not)."""
        assert self.proc.stdout is not None
        while True:
            line = (await asyncio.wait_for(self.proc.stdout.readline(), LIMIT_S)).decode()
            if not line:  # exited: say why (its stderr), not only what it printed
                assert self.proc.stderr is not None
                err = (await asyncio.wait_for(self.proc.stderr.read(), LIMIT_S)).decode()
                raise AssertionError("the daemon exited: " + "".join(self.out) + err)
            self.out.append(line)
            found = re.search(r"web chat at http://127\.0\.0\.1:(\d+)/", line)
            if found:
                self.port = int(found.group(1))
            if line.startswith("roost: model"):
                return

    async def kill(self) -> None:
        self.proc.kill()
        await asyncio.wait_for(self.proc.wait(), LIMIT_S)

    async def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(self.proc.communicate(), LIMIT_S)
        assert self.proc.returncode == 0, err.decode()


Launch = Callable[..., Awaitable[Daemon]]


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, models=["m1"]) as server:
        yield server


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI(TOKEN, max_poll_s=2.0) as server:
        yield server


@pytest.fixture
def config(home: Path) -> Path:
    """The ten people, all of the tenant alice."""
    path = Path(os.environ["ROOST_CONFIG"])
    path.write_text(f"[tenants.alice]\ntelegram_ids = {PEOPLE}\n")
    return path


@pytest.fixture
async def launch(
    home: Path, config: Path, model: FakeOpenAI, fake: FakeBotAPI
) -> AsyncIterator[Launch]:
    daemons: list[Daemon] = []

    async def start(**extra: str) -> Daemon:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
        env.update(
            ROOST_HOME=str(home),
            ROOST_CONFIG=str(config),
            ROOST_WEB__PORT="0",
            ROOST_LOG_LEVEL="INFO",
            ROOST_LLM__PROVIDER="openai",
            ROOST_LLM__BASE_URL=model.base_url,
            ROOST_LLM__API_KEY=KEY,
            ROOST_LLM__MODEL="m1",
            ROOST_TELEGRAM__TOKEN=TOKEN,
            ROOST_TELEGRAM__API_BASE_URL=fake.base_url,
            ROOST_LIMITS__SHUTDOWN_GRACE_S="1",
            ROOST_GRADING__JUDGE_DAILY_CAP="0",
            **extra,
        )
        proc = await asyncio.create_subprocess_exec(
            *ROOST, "serve", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        daemon = Daemon(proc)
        daemons.append(daemon)
        await daemon.started()
        return daemon

    yield start
    for daemon in daemons:
        if daemon.proc.returncode is None:
            daemon.proc.kill()
            await daemon.proc.wait()


def open_work(home: Path) -> int:
    """Updates not answered yet plus outbox entries not delivered yet."""
    with contextlib.closing(sqlite3.connect(home / "roost.db", timeout=30)) as conn:
        (inbox,) = conn.execute(
            "SELECT COUNT(*) FROM channel_inbox WHERE state IN ('new', 'working')"
        ).fetchone()
        (outbox,) = conn.execute("SELECT COUNT(*) FROM outbox WHERE state = 'queued'").fetchone()
    return int(inbox) + int(outbox)


async def idle(home: Path, fake: FakeBotAPI, answers: int) -> None:
    """Until every question is answered and nothing is left to do."""
    async with asyncio.timeout(LIMIT_S):
        while sum(fake.sent_count[p] for p in PEOPLE) < answers or open_work(home):
            await asyncio.sleep(0.1)


def answered(fake: FakeBotAPI) -> dict[int, list[str]]:
    return {p: [m.text for m in fake.sent_to(p)] for p in PEOPLE if fake.sent_to(p)}


def questions(count: int, chats: int = len(PEOPLE)) -> dict[int, list[str]]:
    """`count` questions spread over the first `chats` chats, in the order they are sent."""
    asked: dict[int, list[str]] = {}
    for n in range(count):
        asked.setdefault(PEOPLE[n % chats], []).append(f"q{n}")
    return asked


def assert_each_answered_once_in_order(fake: FakeBotAPI, asked: dict[int, list[str]]) -> None:
    got = answered(fake)
    every = Counter(text for texts in got.values() for text in texts)
    assert all(n == 1 for n in every.values()), [t for t, n in every.items() if n > 1]
    assert got == {p: [f"echo: {q}" for q in qs] for p, qs in asked.items()}


async def test_kill_9_while_replies_are_retried_loses_nothing(
    launch: Launch, fake: FakeBotAPI, home: Path
) -> None:
    fake.fail("sendMessage", *[Failure.bad_gateway()] * 100_000)  # Telegram fails every send
    daemon = await launch()
    asked = questions(30)
    for n in range(30):
        fake.push_text(PEOPLE[n % len(PEOPLE)], f"q{n}")
    everyone = {f"echo: q{n}" for n in range(30)}
    tried = lambda: {c.params.get("text") for c in fake.calls_of("sendMessage")}  # noqa: E731
    await fake.wait_until(lambda: tried() >= everyone, LIMIT_S)  # each answer tried once
    attempts = len(fake.calls_of("sendMessage"))
    await fake.wait_until(lambda: len(fake.calls_of("sendMessage")) > attempts, LIMIT_S)
    await daemon.kill()  # mid-retry
    # a retry it wrote just before it died is failed too, not taken once Telegram is back
    await until(fake.quiet, "the killed daemon's last calls answered")
    assert answered(fake) == {}

    fake.heal("sendMessage")  # Telegram is back
    await launch()
    await idle(home, fake, 30)
    assert_each_answered_once_in_order(fake, asked)


async def test_a_graceful_restart_with_queued_messages_drops_none(
    launch: Launch, fake: FakeBotAPI, home: Path
) -> None:
    daemon = await launch()
    asked = questions(30, chats=3)
    for n in range(30):
        fake.push_text(PEOPLE[n % 3], f"q{n}")
    # the per-chat pacing (a burst of 3, then 1 a second) keeps the rest queued
    await fake.wait_until(lambda: len(fake.calls_of("sendMessage")) >= 3, LIMIT_S)
    await daemon.stop()
    assert sum(fake.sent_count[p] for p in PEOPLE) < 30, "stopped with messages queued"

    await launch()
    await idle(home, fake, 30)
    assert_each_answered_once_in_order(fake, asked)


async def test_webhook_updates_answered_200_survive_a_kill(
    launch: Launch, fake: FakeBotAPI, home: Path
) -> None:
    webhook = {
        "ROOST_TELEGRAM__MODE": "webhook",
        "ROOST_TELEGRAM__WEBHOOK_URL": "https://roost.example/telegram/webhook",
        "ROOST_TELEGRAM__WEBHOOK_SECRET": SECRET,
    }
    fake.hold("sendMessage")  # replies wait at the Bot API: none is out before the kill
    daemon = await launch(**webhook)
    asked = questions(WEBHOOK_UPDATES)
    url = f"http://127.0.0.1:{daemon.port}/telegram/webhook"
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    async with aiohttp.ClientSession() as http:
        for n in range(WEBHOOK_UPDATES):  # a message id is never repeated in a chat
            message = fake.message(PEOPLE[n % 10], f"q{n}", message_id=501 + n)
            update = {"update_id": 1 + n, "message": message}
            async with http.post(url, json=update, headers=headers) as resp:
                assert resp.status == 200
    await daemon.kill()  # right after the last 200
    assert answered(fake) == {}

    await launch(**webhook)
    fake.release()  # held replies of the killed daemon went nowhere; the new ones go out
    await idle(home, fake, WEBHOOK_UPDATES)
    assert_each_answered_once_in_order(fake, asked)
