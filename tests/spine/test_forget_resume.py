"""`roost forget` killed with SIGKILL half way: nothing of the tenant is served, doctor says so,
and running it again finishes it with one audit record.

The kill lands at a known point: the test holds roost.db's write lock, so
`roost forget` has written its marker and waits for the database when it is
killed (kill -9, as a crash or the OOM killer would). Its files, memory and
rows are all still there then. The real daemon must refuse the tenant on the
web (its page token) and in the terminal (`roost send`), a `roost forget`
while it runs must be refused (the home lock) and delete nothing, `roost doctor`
must FAIL with the fix, and the second `roost forget` must finish the job.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
from pathlib import Path

import aiohttp

from bridge.app.build import Roost
from tests.conftest import web_msg
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import ROOST, env_for, fake, run, start_daemon
from tests.spine.test_export import audit_lines, rows_of, setup_two_people

__all__ = ["fake"]
WAIT_S = 60.0  # a safety net against a hang, never a speed check
BOB_PAGE = "bob-page-token-5c1d8e0f"


def configure_bob(config: Path) -> None:
    """Bob with a page of his own; alice configured too (`setup_two_people` sends as her)."""
    config.write_text(f'[tenants.alice]\n\n[tenants.bob]\nweb_token = "{BOB_PAGE}"\n')


async def killed_forget(home: Path, env: dict[str, str]) -> None:
    """Start `roost forget` for bob and kill -9 it once its marker is written."""
    db = sqlite3.connect(home / "roost.db", isolation_level=None)
    db.execute("BEGIN IMMEDIATE")  # forget waits for this lock after writing its marker
    try:
        proc = await asyncio.create_subprocess_exec(
            *ROOST,
            "forget",
            "--tenant",
            "bob",
            "--yes",
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        marker = home / "forgetting" / "bob.json"
        async with asyncio.timeout(WAIT_S):
            while not marker.exists() and proc.returncode is None:
                await asyncio.sleep(0.02)
        assert marker.exists()
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    finally:
        db.execute("ROLLBACK")
        db.close()


async def test_an_interrupted_forget_serves_nothing_and_a_rerun_finishes_it(
    home: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    configure_bob(Path(env["ROOST_CONFIG"]))
    await setup_two_people(home, env)
    before = audit_lines(home, "bob")
    await killed_forget(home, env)
    memory = home / "tenants" / "bob" / "global" / "memory"
    assert any("bob likes tea" in p.read_text() for p in memory.glob("*.md"))  # still there

    code, out, _ = await run(["send", "--tenant", "bob", "what do I like?"], env)
    assert "being deleted" in out and "tea" not in out and "echo" not in out
    daemon = await start_daemon(env)
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
            page = {"Authorization": f"Bearer {BOB_PAGE}"}
            for path in ("/api/history?chat=default", "/api/conversations?chat=default"):
                async with http.get(path, headers=page) as response:
                    assert response.status == 401, path
            async with http.post("/api/chat", json={"text": "hi"}, headers=page) as response:
                assert response.status == 401
        # no re-run under a running daemon (it holds the home lock): what it had queued or in
        # flight could be written after the deletion
        code, _, err = await run(["forget", "--tenant", "bob", "--yes"], env)
        assert code == 1 and "stop it first" in err and "Nothing was deleted" in err
        assert any("bob likes tea" in p.read_text() for p in memory.glob("*.md"))
    finally:
        await daemon.stop()

    code, out, _ = await run(["doctor", "--timeout", "5"], env)
    (line,) = [row for row in out.splitlines() if " forget " in f" {row} "]
    assert code == 1 and line.startswith("FAIL") and "bob" in line
    assert "roost forget --tenant bob --yes" in line

    code, out, err = await run(["forget", "--tenant", "bob", "--yes"], env)
    assert code == 0, err
    assert "interrupted run finished" in out
    assert not (home / "tenants" / "bob").exists()
    assert not (home / "forgetting" / "bob.json").exists()
    assert set(rows_of(home / "roost.db", "bob").values()) == {0}
    *kept, last = audit_lines(home, "bob")
    assert kept == before  # exactly one record for the whole forgetting
    gone = json.loads(last)
    assert gone["event"] == "data.forgotten" and gone["details"]["files"] >= 5
    assert gone["details"]["rows"] > 0  # counted although the first run was killed
    code, out, _ = await run(["doctor", "--timeout", "5"], env)
    assert " forget " not in out.replace("\n", " \n ")
    code, out, _ = await run(["audit", "verify"], env)
    assert code == 0 and "intact" in out


async def test_export_goes_to_the_homes_exports_folder_and_says_where(
    home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    env = env_for(home, fake)
    assert (await run(["send", "--tenant", "bob", "hello"], env))[0] == 0
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        "export",
        "--tenant",
        "bob",
        env=env,
        cwd=elsewhere,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), WAIT_S)
    assert proc.returncode == 0, err.decode()
    assert list(elsewhere.iterdir()) == []  # nothing in the current directory
    (made,) = (home / "exports").iterdir()
    assert (home / "exports").stat().st_mode & 0o777 == 0o700
    assert made.stat().st_mode & 0o777 == 0o600 and made.name.startswith("roost-export-bob-")
    assert f"to {made} " in out.decode()  # the full path it wrote
    code, out_text, _ = await run(["forget", "--tenant", "bob", "--yes"], env)
    assert code == 0 and str(made) in out_text  # the operator's copy stays, named


async def test_a_barred_tenant_resolves_to_nothing_and_is_told_why(roost: Roost) -> None:
    said = await roost.core.handle(web_msg("hello", 1))
    assert said.kind == "answer"
    roost.resolver.barred = lambda tenant: tenant == "local"  # as a forgetting marker does
    assert roost.resolver.resolve(web_msg("hi", 2)) is None  # jobs and files go nowhere
    assert roost.resolver.match(web_msg("hi", 2)) == "local"
    refused = await roost.core.handle(web_msg("what did I say?", 3))
    assert refused.kind == "refusal" and "being deleted" in refused.text
    assert "roost forget --tenant" in refused.text
