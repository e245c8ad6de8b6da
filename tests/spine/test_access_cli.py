"""`roost access list|revoke`: the operator sees who gets in and ends a pairing.

The daemon side is the real roost with python-telegram-bot against the fake
Bot API; the operator side is `roost access` as a real subprocess on the same
home, as an operator would run it next to a running daemon.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.core.config import Settings, load_settings
from bridge.core.pairing import PairingStore
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, TOKEN, running
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.test_pairing_revoke import PAIRED, pair_as, settle
from tests.waits import HANG_S

CONFIG = f"[tenants.alice]\ntelegram_ids = [{ALICE}]\n[tenants.bob]\n"


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI(TOKEN, max_poll_s=2.0) as server:
        yield server


def write_config() -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(CONFIG)


async def roost(*argv: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        *argv,
        env={**os.environ},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def settings_for(home: Path, fake: FakeBotAPI) -> Settings:
    write_config()
    return load_settings(home=home, telegram={"token": TOKEN, "api_base_url": fake.base_url})


def chain_events(home: Path) -> list[dict[str, object]]:
    lines = (home / "audit" / "chain.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


async def test_revoke_by_identity_takes_effect_on_the_next_message(
    home: Path, fake: FakeBotAPI
) -> None:
    backend = ScriptedBackend("for bob", "alice 1")
    async with running(settings_for(home, fake), fake, backend) as run:
        await pair_as(fake, run.pairing, "bob")
        fake.push_text(PAIRED, "first")
        await fake.wait_until(lambda: len(fake.sent_to(PAIRED)) == 3)
        code, out = await roost("access", "list")
        assert code == 0, out
        rows = [line.split("\t") for line in out.splitlines()]
        assert rows[0] == ["IDENTITY", "TENANT", "HOW", "SINCE", "LAST SEEN"]
        assert [r[:3] for r in rows[1:]] == [
            [f"telegram:{ALICE}", "alice", "config"],
            [f"telegram:{PAIRED}", "bob", "paired"],
        ]
        assert rows[2][3].startswith("paired 20") and rows[2][4].startswith("20")
        code, out = await roost("access", "revoke", f"telegram:{PAIRED}")
        assert code == 0, out
        assert f"revoked telegram:{PAIRED} (paired to bob)" in out
        fake.push_text(PAIRED, "second")
        await settle(run, 1)
        replies = [m.text for m in fake.sent_to(PAIRED)[3:]]
        assert len(replies) == 1 and "I don't know you" in replies[0]
        assert [r.messages[-1].content for r in backend.requests] == ["first", "sync 1"]
    (record,) = [e for e in chain_events(home) if e["event"] == "pairing.revoked"]
    assert record["tenant"] == "bob"
    assert record["details"] == {"channel": "telegram", "identity": str(PAIRED), "by": "operator"}


async def test_revoke_a_tenant_removes_its_pairings_and_names_config_ids(home: Path) -> None:
    write_config()
    code, out = await roost("pair", "bob")  # creates the home the way an operator does
    assert code == 0, out
    db = await open_database(home / "roost.db")
    try:
        store = PairingStore(db)
        for who, tenant in (("1", "bob"), ("2", "bob"), ("3", "alice")):
            assert (
                await store.redeem("telegram", who, await store.issue(tenant))
            ).outcome == "bound"
    finally:
        await db.aclose()
    code, out = await roost("access", "revoke", "bob")
    assert code == 0, out
    assert "revoked telegram:1 (paired to bob)" in out and "revoked telegram:2" in out
    code, out = await roost("access", "revoke", "alice")
    assert code == 0, out
    assert "revoked telegram:3 (paired to alice)" in out
    assert f"telegram:{ALICE} (in [tenants.alice] telegram_ids) is mapped in the config" in out
    code, out = await roost("access", "revoke", f"telegram:{ALICE}")
    assert code == 1
    assert (
        "remove it from the config" in out and f"no pairing to revoke for telegram:{ALICE}" in out
    )
    code, out = await roost("access", "list")
    assert [line.split("\t")[0] for line in out.splitlines()[1:]] == [f"telegram:{ALICE}"]
    revoked = [e for e in chain_events(home) if e["event"] == "pairing.revoked"]
    assert [(e["tenant"], e["details"]["identity"]) for e in revoked] == [  # type: ignore[index]
        ("bob", "1"),
        ("bob", "2"),
        ("alice", "3"),
    ]


async def test_revoking_a_tenant_roost_does_not_know_names_the_known_ones(home: Path) -> None:
    """s46: `roost access revoke alcie` (a typo) said only "no pairing to revoke for alcie",
    as for a real tenant nobody is paired to."""
    write_config()
    code, out = await roost("access", "revoke", "alcie")
    assert code == 1, out
    assert out.startswith("no pairing to revoke for alcie\n"), out
    assert "roost access revoke: there is no tenant 'alcie' in the configuration" in out
    assert out.rstrip().endswith("Check the spelling."), out
    code, out = await roost("access", "revoke", "alice")  # configured, nobody paired
    assert code == 1 and out.endswith("no pairing to revoke for alice\n"), out
    assert "there is no tenant" not in out
