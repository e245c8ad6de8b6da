"""`roost doctor` on a healthy home and a broken one, as a real subprocess.

The healthy home is made by the real `roost pair` (umask 0077, real database
and audit chain); the model server is the fake OpenAI server, Telegram the
fake Bot API, both on 127.0.0.1. The broken home is the same home after an
operator's accidents: a 0755 home, a clobbered database header, an edited
audit record, a model server that is gone, a revoked bot token.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path

from bridge.cli.doctor import FAIL_FREE, WARN_FREE, disk_check
from tests.fakes.fake_openai import FakeOpenAI
from tests.telegram.conftest import TOKEN
from tests.telegram.fake_bot_api import BOT_USERNAME, FakeBotAPI
from tests.waits import HANG_S

API_KEY = "sk-proj-T3stKeyT3stKeyT3stKeyT3stKeyT3stKey0123"


async def roost(*argv: str, **env: str) -> tuple[int, str]:
    """`roost ARGV` as a process; `doctor` waits for the fake servers as long as a test may
    (its own 5 s default would fail a server that is merely slow on a busy machine)."""
    if argv[:1] == ("doctor",) and "--timeout" not in argv:
        argv = (*argv, "--timeout", str(int(HANG_S)))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        *argv,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def lines(out: str) -> dict[str, tuple[str, str]]:
    """check name -> (status, reason)."""
    parsed = {}
    for line in out.splitlines():
        status, name, reason = line.split(maxsplit=2)
        parsed[name] = (status, reason)
    return parsed


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_for(llm_url: str, bot_url: str, token: str = TOKEN) -> dict[str, str]:
    return {
        "ROOST_LLM__BASE_URL": llm_url,
        "ROOST_LLM__API_KEY": API_KEY,
        "ROOST_LLM__MODEL": "fake-model",
        "ROOST_TELEGRAM__TOKEN": token,
        "ROOST_TELEGRAM__API_BASE_URL": bot_url,
    }


async def test_a_healthy_home_is_all_ok(home: Path) -> None:
    async with FakeOpenAI() as llm, FakeBotAPI(TOKEN) as bot:
        env = env_for(llm.base_url, bot.base_url)
        code, out = await roost("pair", "local", **env)
        assert code == 0, out
        code, out = await roost("doctor", **env)
    assert code == 0, out
    checks = lines(out)
    assert list(checks) == [
        "config",
        "home",
        "database",
        "audit",
        "backend",
        "telegram",
        "webhook",
        "sandbox",
        "disk",
    ]
    for name in ("config", "home", "database", "audit", "backend", "telegram", "webhook"):
        assert checks[name][0] == "ok", (name, out)
    assert "chain intact: 1 record (" in checks["audit"][1]  # one, not "1 records"
    assert "fake-model among them" in checks["backend"][1]
    assert f"@{BOT_USERNAME}" in checks["telegram"][1]
    assert "long polling" in checks["webhook"][1]
    assert "landlock" in checks["sandbox"][1] and "seccomp" in checks["sandbox"][1]
    assert checks["disk"][0] != "FAIL"
    assert TOKEN not in out and TOKEN.split(":")[1] not in out and API_KEY not in out


def tamper(chain: Path) -> None:
    """Change what the first record says, keep it valid JSON."""
    first, *rest = chain.read_text().splitlines(keepends=True)
    record = json.loads(first)
    record["tenant"] = "mallory"
    chain.write_text(json.dumps(record, separators=(",", ":")) + "\n" + "".join(rest))


def break_home(home: Path) -> None:
    """Open the home to others, clobber the database header, edit an audit record."""
    home.chmod(0o755)
    with (home / "roost.db").open("r+b") as f:
        f.write(b"this is not SQLite")  # the 16-byte header and then some
    tamper(home / "audit" / "chain.jsonl")


async def test_a_broken_home_fails_each_broken_check(home: Path) -> None:
    async with FakeOpenAI() as llm, FakeBotAPI(TOKEN) as bot:
        code, out = await roost("pair", "local", **env_for(llm.base_url, bot.base_url))
        assert code == 0, out
        break_home(home)
        gone = f"http://127.0.0.1:{closed_port()}/v1"
        revoked = "987654321:AAFrevokedrevokedrevokedrevokedrev"
        code, out = await roost("doctor", **env_for(gone, bot.base_url, revoked))
    assert code == 1, out
    checks = lines(out)
    assert checks["config"][0] == "ok"
    # a 0755 home alone: a warning with the chmod, every start tightens it (s33 N4)
    assert checks["home"][0] == "warn" and "the home 0755" in checks["home"][1]
    assert checks["database"][0] == "FAIL" and "not a database" in checks["database"][1]
    assert checks["audit"][0] == "FAIL" and "record 1" in checks["audit"][1]
    assert checks["backend"][0] == "FAIL" and "unreachable" in checks["backend"][1]
    assert checks["telegram"][0] == "FAIL" and "rejected" in checks["telegram"][1]
    assert revoked not in out and revoked.split(":")[1] not in out and API_KEY not in out


async def test_a_group_readable_file_inside_the_home_fails(home: Path) -> None:
    code, out = await roost("pair", "local", ROOST_LLM__PROVIDER="offline")
    assert code == 0, out
    (home / "roost.db").chmod(0o644)
    code, out = await roost("doctor", ROOST_LLM__PROVIDER="offline")
    assert code == 1
    assert lines(out)["home"] == (
        "FAIL",
        "open to group/others: roost.db 0644 (want dirs 0700, files 0600)",
    )
    assert lines(out)["backend"][0] == "ok" and "offline" in lines(out)["backend"][1]


def linked_home(home: Path, real: Path) -> Path:
    real.mkdir(mode=0o700)
    home.parent.mkdir(parents=True, exist_ok=True)
    home.symlink_to(real)
    return real


async def test_a_home_reached_through_a_link_is_judged_by_its_folder(
    home: Path, tmp_path: Path
) -> None:
    """`ROOST_HOME` may be a link (to a data disk); the link's own mode (0777) is not the
    home's, the folder's is."""
    real = linked_home(home, tmp_path / "data-disk-home")
    code, out = await roost("pair", "local", ROOST_LLM__PROVIDER="offline")
    assert code == 0, out
    code, out = await roost("doctor", ROOST_LLM__PROVIDER="offline")
    assert lines(out)["home"][0] == "ok", out
    real.chmod(0o755)
    code, out = await roost("doctor", ROOST_LLM__PROVIDER="offline")
    assert lines(out)["home"] == (  # a warning: every start tightens it (s33 N4)
        "warn",
        f"the home 0755 is open to group/others: roost tightens it to 0700 at its next "
        f"start, or run `chmod 700 {home}` now",
    )


def test_disk_thresholds() -> None:
    assert disk_check(WARN_FREE).status == "ok"
    assert disk_check(WARN_FREE - 1).status == "warn"
    assert disk_check(FAIL_FREE).status == "warn"
    assert disk_check(FAIL_FREE - 1).status == "FAIL"
    assert disk_check(50 << 20).reason.startswith("50 MiB free")
