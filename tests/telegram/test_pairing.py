"""The pairing store on a real SQLite file, with an injected clock; `roost pair`."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from bridge.channels.telegram.pace import ChatPacer
from bridge.core.db import connect
from bridge.core.pairing import ALPHABET, LOCKOUT_S, PairingStore, code_hash
from bridge.types.messages import Inbound
from tests.conftest import Clock
from tests.waits import HANG_S


@pytest.fixture
def db(tmp_path: Path) -> sqlite3.Connection:
    conn = connect(tmp_path / "roost.db")
    yield conn  # type: ignore[misc]
    conn.close()


def test_codes_are_unambiguous_hashed_and_single_use(db: sqlite3.Connection, clock: Clock) -> None:
    store = PairingStore(db, clock)
    codes = {store.issue("bob") for _ in range(50)}
    assert len(codes) == 50
    assert all(len(c) == 8 and set(c) <= set(ALPHABET) for c in codes)
    assert not set("01OIL") & set(ALPHABET)
    stored = "\n".join(str(row) for row in db.execute("SELECT * FROM pairing_codes"))
    assert all(c not in stored for c in codes)
    code = codes.pop()
    assert code_hash(code) in stored
    assert store.redeem("telegram", "7", code).outcome == "bound"
    assert store.bound_tenant("telegram", "7") == "bob"
    assert store.redeem("telegram", "8", code).outcome == "wrong"
    rule = store.rule()
    assert rule(Inbound("telegram", "7", "7", "hi", "1")) == "bob"
    assert rule(Inbound("web", "7", "7", "hi", "1")) is None


def test_codes_expire_after_an_hour(db: sqlite3.Connection, clock: Clock) -> None:
    store = PairingStore(db, clock)
    code = store.issue("bob")
    clock.advance(3601)
    result = store.redeem("telegram", "7", code)
    assert result.outcome == "wrong" and store.bound_tenant("telegram", "7") is None


def test_lockout_lasts_an_hour_and_blocks_even_the_right_code(
    db: sqlite3.Connection, clock: Clock
) -> None:
    store = PairingStore(db, clock)
    code = store.issue("bob")
    results = [store.redeem("telegram", "7", "WRONGONE") for _ in range(5)]
    assert [r.failures_left for r in results[:4]] == [4, 3, 2, 1]
    assert results[4].outcome == "locked" and results[4].just_locked
    again = store.redeem("telegram", "7", code)
    assert again.outcome == "locked" and not again.just_locked
    assert store.redeem("telegram", "8", "WRONGONE").failures_left == 4, "per identity"
    clock.advance(LOCKOUT_S - 1)
    assert store.redeem("telegram", "7", code).outcome == "locked"
    clock.advance(2)
    code = store.issue("bob")
    assert store.redeem("telegram", "7", code).outcome == "bound"


def test_failures_older_than_the_window_are_forgotten(db: sqlite3.Connection, clock: Clock) -> None:
    store = PairingStore(db, clock)
    for _ in range(4):
        store.redeem("telegram", "7", "WRONGONE")
    clock.advance(3700)
    assert store.redeem("telegram", "7", "WRONGONE").failures_left == 4


def test_refusal_is_loud_once_per_identity(db: sqlite3.Connection, clock: Clock) -> None:
    store = PairingStore(db, clock)
    assert store.should_refuse_loudly("telegram", "9")
    assert not store.should_refuse_loudly("telegram", "9")
    assert store.should_refuse_loudly("telegram", "10")


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
    db = connect(home / "roost.db")
    try:
        assert PairingStore(db).redeem("telegram", "5", code).tenant == "carol"
    finally:
        db.close()
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
