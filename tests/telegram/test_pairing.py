"""`roost pair` as a real subprocess, and the Telegram pacer. The store itself is tested on
both backends in tests/storage/test_pairing_store.py."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from bridge.app.database import open_database
from bridge.channels.telegram.pace import ChatPacer
from bridge.core.pairing import PairingStore
from tests.waits import HANG_S


async def test_chat_pacer_bursts_then_paces_per_chat() -> None:
    now = [0.0]
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    pacer = ChatPacer(burst=3, rate_per_s=1.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(5):
        await pacer.wait(1)
    assert slept == [1.0, 1.0]
    await pacer.wait(2)
    assert slept == [1.0, 1.0], "another chat has its own bucket"


async def test_roost_pair_prints_a_code_that_works(home: Path) -> None:
    (home.parent / "roost.toml").write_text("[tenants.carol]\ntelegram_ids = []\n")
    env = {**os.environ}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        "pair",
        "carol",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert proc.returncode == 0, err.decode()
    line = out.decode().splitlines()[0]
    code = line.rsplit(" ", 1)[1]
    assert line.startswith("Pairing code for tenant carol: ") and len(code) == 8
    assert code not in err.decode()
    db = await open_database(home / "roost.db")
    try:
        assert (await PairingStore(db).redeem("telegram", "5", code)).tenant == "carol"
    finally:
        await db.aclose()
    bad = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        "pair",
        "Not A Tenant",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    await bad.communicate()
    assert bad.returncode == 2
