"""The real daemon (`roost serve` as a process) on a real Synapse, with a fake model.

The daemon is configured from the environment (`ROOST_MATRIX__*`) and the
config file (`matrix_ids`). The person writes in a direct room; the daemon
answers through the fake OpenAI-compatible server; `roost send --to
matrix:<user id>` from another process reaches the person's direct room
through the running daemon's outbox. The audit chain keeps the `matrix`
channel in its records and verifies; the access token never reaches the
log. (A restart is tested in process: `test_chat.py`.)
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.matrix.conftest import Accounts
from tests.matrix.person import WAIT_S, Person
from tests.matrix.synapse_server import Synapse
from tests.spine.test_daemon import ROOST, env_for
from tests.whatsapp.test_daemon_e2e import roost_send, start, stop


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


async def test_matrix_through_the_daemon(
    home: Path, model: FakeOpenAI, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot, who = accounts.bot.user_id, accounts.alice.user_id
    config = Path(os.environ["ROOST_CONFIG"])
    await asyncio.to_thread(config.write_text, f'[tenants.alice]\nmatrix_ids = ["{who}"]\n')
    env = env_for(home, model) | {
        "ROOST_MATRIX__HOMESERVER": synapse.url,
        "ROOST_MATRIX__USER_ID": bot,
        "ROOST_MATRIX__ACCESS_TOKEN": accounts.bot.access_token,
    }
    proc, _ = await start(env)
    try:
        room = await alice.create_room([bot])
        await alice.wait(lambda: alice.membership(room, bot) == "join", "the bot joined")
        await alice.say(room, "hello")
        await alice.wait(lambda: alice.texts(room, bot) == ["echo: hello"], "the answer")
        out = await roost_send(env, "--to", f"matrix:{who}", "⏰ water the basil")
        assert f"for matrix:{who}" in out
        await alice.wait(lambda: len(alice.texts(room, bot)) == 2, "the reminder")
    finally:
        log = await stop(proc)
    assert "hello" not in log and accounts.bot.access_token not in log
    assert alice.texts(room, bot) == ["echo: hello", "⏰ water the basil"]

    chain = home / "audit" / "chain.jsonl"
    records = [json.loads(line) for line in chain.read_text().splitlines()]
    assert not [r for r in records if r["details"].get("_dropped")]
    received = [r for r in records if r["event"] == "message.received"]
    assert len(received) == 1 and all(r["details"]["channel"] == "matrix" for r in received)
    (delivered,) = [r for r in records if r["event"] == "outbox.delivered"]
    assert delivered["details"]["channel"] == "matrix"
    verify = await asyncio.create_subprocess_exec(
        *ROOST, "audit", "verify", env=env, stdout=asyncio.subprocess.DEVNULL
    )
    assert await asyncio.wait_for(verify.wait(), WAIT_S) == 0
