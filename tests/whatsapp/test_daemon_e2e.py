"""The real daemon (`roost serve` as a process) with the fake Cloud API and a fake model.

Meta's webhook reaches the web server's `/whatsapp/webhook`; answers go to
the fake's `/messages`; `roost send --to whatsapp:<phone>` from another
process is delivered by the running daemon's scheduler; a message id seen
before a restart is not answered after it (the ids are in roost.db); the
audit chain keeps the `whatsapp` channel in its records and verifies.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes import whatsapp_payloads as hooks
from tests.fakes.fake_openai import FakeOpenAI
from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.spine.test_daemon import ROOST, env_for
from tests.whatsapp.conftest import ALICE, APP_SECRET, STRANGER, TOKEN, VERIFY

WAIT_S = 60.0  # a safety net against a hung run, not a speed check


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


@pytest.fixture
async def fake() -> AsyncIterator[FakeWhatsApp]:
    async with FakeWhatsApp(TOKEN, APP_SECRET, statuses=True) as server:
        yield server


def daemon_env(home: Path, model: FakeOpenAI, fake: FakeWhatsApp) -> dict[str, str]:
    Path(os.environ["ROOST_CONFIG"]).write_text(
        f'[tenants.alice]\nwhatsapp_ids = ["+{ALICE[:2]} {ALICE[2:5]} {ALICE[5:]}"]\n'
    )
    return env_for(home, model) | {
        "ROOST_WHATSAPP__ACCESS_TOKEN": TOKEN,
        "ROOST_WHATSAPP__APP_SECRET": APP_SECRET,
        "ROOST_WHATSAPP__VERIFY_TOKEN": VERIFY,
        "ROOST_WHATSAPP__PHONE_NUMBER_ID": fake.phone_number_id,
        "ROOST_WHATSAPP__API_BASE_URL": fake.base_url,
    }


async def start(env: dict[str, str]) -> tuple[asyncio.subprocess.Process, int]:
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "serve", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    port = 0
    while True:
        raw = await asyncio.wait_for(proc.stdout.readline(), WAIT_S)
        if not raw:
            _, err = await proc.communicate()
            raise AssertionError(f"daemon exited early: {err.decode()}")
        line = raw.decode()
        found = re.search(r"web chat at http://127\.0\.0\.1:(\d+)/", line)
        port = int(found.group(1)) if found else port
        if line.startswith("roost: model"):
            return proc, port


async def stop(proc: asyncio.subprocess.Process) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(proc.communicate(), WAIT_S)
    assert proc.returncode == 0, err.decode()
    return err.decode()


async def roost_send(env: dict[str, str], *argv: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        "send",
        *argv,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), WAIT_S)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_whatsapp_through_the_daemon_survives_a_restart(
    home: Path, model: FakeOpenAI, fake: FakeWhatsApp
) -> None:
    env = daemon_env(home, model, fake)
    proc, port = await start(env)
    try:
        fake.webhook_url = f"http://127.0.0.1:{port}/whatsapp/webhook"
        first, body = hooks.text(fake.phone_number_id, ALICE, "hello")
        fake.last_in[ALICE] = fake.clock()
        assert await fake.deliver(body) == 200
        await fake.wait_sent(1)
        out = await roost_send(env, "--to", f"whatsapp:+{ALICE}", "⏰ water the basil")
        assert "for whatsapp:" + ALICE in out
        await fake.wait_sent(2)
        await fake.text(STRANGER, "who are you?")
        await fake.wait_sent(3)
        await fake.settle()
    finally:
        log = await stop(proc)
    assert "hello" not in log and TOKEN not in log and APP_SECRET not in log

    proc, port = await start(env)
    try:
        fake.webhook_url = f"http://127.0.0.1:{port}/whatsapp/webhook"
        assert await fake.deliver(body) == 200, "Meta retries the first message after a restart"
        await fake.text(ALICE, "after the restart")
        await fake.wait_sent(4)
    finally:
        await stop(proc)
    assert fake.texts(ALICE) == ["echo: hello", "⏰ water the basil", "echo: after the restart"]
    assert "I don't know you" in fake.texts(STRANGER)[0]

    chain = home / "audit" / "chain.jsonl"
    records = [json.loads(line) for line in chain.read_text().splitlines()]
    assert not [r for r in records if r["details"].get("_dropped")]
    received = [r for r in records if r["event"] == "message.received"]
    assert len(received) == 2 and all(r["details"]["channel"] == "whatsapp" for r in received)
    assert first not in chain.read_text() and ALICE not in json.dumps(received)
    (refused,) = [r for r in records if r["event"] == "access.refused"]
    assert refused["details"] == {"channel": "whatsapp", "identity": STRANGER, "suppressed": 0}
    (delivered,) = [r for r in records if r["event"] == "outbox.delivered"]
    assert delivered["details"]["channel"] == "whatsapp"
    verify = await asyncio.create_subprocess_exec(
        *ROOST, "audit", "verify", env=env, stdout=asyncio.subprocess.DEVNULL
    )
    assert await asyncio.wait_for(verify.wait(), WAIT_S) == 0
