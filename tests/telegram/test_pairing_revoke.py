"""A pairing holds only while its tenant exists and is not revoked (issue 9, item 13).

The real roost with the real python-telegram-bot Application against the
fake Bot API; `roost pair` as a real subprocess.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from bridge.core.config import Settings, load_settings
from bridge.core.db import connect
from bridge.core.pairing import PairingStore
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, TOKEN, Running, running
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import HANG_S

PAIRED = 555001


def with_tenants(home: Path, fake: FakeBotAPI, *extra: str) -> Settings:
    tenants: dict[str, object] = {"alice": {"telegram_ids": [ALICE]}}
    tenants.update({t: {} for t in extra})
    return load_settings(
        home=home, telegram={"token": TOKEN, "api_base_url": fake.base_url}, tenants=tenants
    )


async def pair_as(fake: FakeBotAPI, pairing: PairingStore, tenant: str) -> None:
    """A stranger writes first (and is refused), then pairs with a code."""
    fake.push_text(PAIRED, "hello?")
    await fake.wait_until(lambda: len(fake.sent_to(PAIRED)) == 1)
    assert "I don't know you" in fake.sent_to(PAIRED)[0].text
    fake.push_text(PAIRED, f"/pair {await pairing.issue(tenant)}")
    await fake.wait_until(lambda: len(fake.sent_to(PAIRED)) == 2)
    assert f"as {tenant}" in fake.sent_to(PAIRED)[1].text


async def settle(run: Running, n: int) -> None:
    """Alice says `sync n`; every update pushed so far has been handled."""
    run.fake.push_text(ALICE, f"sync {n}")
    await run.idle()
    assert len(run.fake.sent_to(ALICE)) == n


async def test_removed_tenant_makes_the_paired_person_a_stranger(
    home: Path, fake: FakeBotAPI
) -> None:
    backend = ScriptedBackend("for bob", "alice 1", "alice 2")
    async with running(with_tenants(home, fake, "bob"), fake, backend) as run:
        await pair_as(fake, run.pairing, "bob")
        fake.push_text(PAIRED, "hi, it's bob")
        await fake.wait_until(lambda: len(fake.sent_to(PAIRED)) == 3)
        assert fake.sent_to(PAIRED)[2].text == "for bob"
    # the operator removes [tenants.bob] and restarts
    async with running(with_tenants(home, fake), fake, backend) as run:
        for text in ("are you there?", "/whoami", "/status"):
            fake.push_text(PAIRED, text)
        await settle(run, 1)
        replies = [m.text for m in fake.sent_to(PAIRED)[3:]]
        assert len(replies) == 1 and "I don't know you" in replies[0]
        asked = [r.messages[-1].content for r in backend.requests]
        assert asked == ["hi, it's bob", "sync 1"]
        assert ("access.refused", None) in [(e[0], e[1]) for e in run.audit.events]
        as_bob = [(e[0], e[2].get("by")) for e in run.audit.events if e[1] == "bob"]
        assert as_bob == []  # ignored, not removed: a start unpairs nobody (atk39 #1)
        assert [b.tenant for b in await run.pairing.bindings()] == ["bob"]


async def test_revoked_binding_takes_effect_on_the_next_message(
    home: Path, fake: FakeBotAPI
) -> None:
    backend = ScriptedBackend("for bob", "alice 1")
    async with running(with_tenants(home, fake, "bob"), fake, backend) as run:
        await pair_as(fake, run.pairing, "bob")
        fake.push_text(PAIRED, "first")
        await fake.wait_until(lambda: len(fake.sent_to(PAIRED)) == 3)
        assert await run.pairing.revoke("telegram", str(PAIRED)) == "bob"
        assert await run.pairing.bindings() == []
        fake.push_text(PAIRED, "/whoami")
        fake.push_text(PAIRED, "second")
        await settle(run, 1)
        replies = [m.text for m in fake.sent_to(PAIRED)[3:]]
        assert len(replies) == 1 and "I don't know you" in replies[0]
        assert [r.messages[-1].content for r in backend.requests] == ["first", "sync 1"]


async def roost_cli(*argv: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        *argv,
        env={**os.environ},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_roost_pair_refuses_a_tenant_that_is_not_configured(home: Path) -> None:
    code, out, err = await roost_cli("pair", "mallory")
    assert code == 2
    assert out == ""
    assert "no tenant 'mallory' in the configuration" in err and "[tenants.mallory]" in err
    db = connect(home / "roost.db")
    try:
        assert db.execute("SELECT count(*) FROM pairing_codes").fetchone() == (0,)
    finally:
        db.close()
    assert not (home / "tenants" / "mallory").exists()
    # configured in the file: accepted; the local tenant always is
    (home.parent / "roost.toml").write_text("[tenants.mallory]\n")
    for tenant in ("mallory", "local"):
        code, out, err = await roost_cli("pair", tenant)
        assert code == 0, err
        assert out.startswith(f"Pairing code for tenant {tenant}: ")
