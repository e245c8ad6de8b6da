"""`roost backup` of a running daemon, `roost restore` into a fresh home.

A real daemon serves web turns (some of them while the backup runs); the
copy is restored into a new home where `roost audit verify` passes, the
web token still works, the conversation continues where the backup left
it and the memory is there. Restore refuses a non-empty home and a damaged
backup; modes survive the round trip.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.grading.judge_fake import is_judge
from tests.spine.test_daemon import env_for, run, start_daemon


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


async def chat(http: aiohttp.ClientSession, token: str, text: str) -> str:
    r = await http.post(
        "/api/chat", json={"text": text}, headers={"Authorization": f"Bearer {token}"}
    )
    return str((await r.json())["reply"])


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


async def test_backup_of_a_running_daemon_restores_into_a_fresh_home(
    home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    env = env_for(home, fake)
    daemon = await start_daemon(env)
    token = (home / "web-token").read_text().strip()
    dest = tmp_path / "backup"
    async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
        assert await chat(http, token, "my secret word is kiwi") == "echo: my secret word is kiwi"
        assert "Remembered" in await chat(http, token, "/remember the fruit is kiwi-memo")
        # turns keep landing (audit records, session rows) while the copy is taken
        busy = asyncio.gather(*(chat(http, token, f"busy {i}") for i in range(6)))
        code, out, err = await run(["backup", str(dest)], env)
        await busy
        assert code == 0, err
        assert "audit chain up to record" in out
        await chat(http, token, "after the backup: banana")
    assert (await daemon.stop())[0] == 0

    manifest = json.loads((dest / "MANIFEST.json").read_text())
    assert manifest["format"] == 1 and "roost.db" in manifest["files"]
    assert mode(dest / "MANIFEST.json") == 0o600 and mode(dest) == 0o700
    assert mode(dest / "web-token") == 0o600 and mode(dest / "tenants") == 0o700

    fresh = tmp_path / "fresh"
    env2 = {**env, "ROOST_HOME": str(fresh)}
    code, out, err = await run(["restore", str(dest)], env2)
    assert code == 0, err
    code, out, err = await run(["audit", "verify"], env2)
    assert code == 0 and "audit chain intact" in out, out + err
    assert int(out.split(": ")[1].split()[0]) >= manifest["audit_seq"] > 0
    assert mode(fresh / "web-token") == 0o600 and mode(fresh) == 0o700
    memories = list((fresh / "tenants").rglob("memory/*.md"))
    assert any("kiwi-memo" in p.read_text() for p in memories)

    daemon = await start_daemon(env2)
    async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
        assert await chat(http, token, "what was it?") == "echo: what was it?"
    assert (await daemon.stop())[0] == 0
    last = [b for b in fake.requests if not is_judge(b)][-1]  # the outcome judge may ask after it
    sent = [m["content"] for m in last["messages"]]
    assert "my secret word is kiwi" in sent
    assert not any("banana" in text for text in sent)  # said after the backup


async def test_restore_refuses_a_non_empty_home_and_a_damaged_backup(
    home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    env = env_for(home, fake)
    code, _, _ = await run(["send", "hello there"], env)
    assert code == 0
    dest = tmp_path / "backup"
    assert (await run(["backup", str(dest)], env))[0] == 0
    code, _, err = await run(["backup", str(dest)], env)
    assert code == 2 and "not empty" in err

    code, _, err = await run(["restore", str(dest)], env)  # the live home
    assert code == 2 and "not empty" in err and "Traceback" not in err
    assert (await run(["send", "/status"], env))[0] == 0  # the home is untouched

    db = dest / "roost.db"
    data = bytearray(db.read_bytes())
    data[-100] ^= 0xFF
    db.write_bytes(bytes(data))
    fresh = {**env, "ROOST_HOME": str(tmp_path / "fresh")}
    code, _, err = await run(["restore", str(dest)], fresh)
    assert code == 2 and "roost.db does not match its SHA-256" in err
    assert not (tmp_path / "fresh").exists()  # nothing written before the check

    (dest / "MANIFEST.json").unlink()
    code, _, err = await run(["restore", str(dest)], fresh)
    assert code == 2 and "MANIFEST.json" in err
