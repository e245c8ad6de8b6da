"""`roost send` and what every process shares: the model check, stdin, the config file, make.

`roost send` refuses (exit 78, saying how to configure a model) when
provider auto found no model, unless the message is a command or `--offline`
asks for the offline answer; `roost send -` reads the message from stdin.
Every command finds the same `roost.toml` (`$ROOST_CONFIG`, else
`~/.config/roost/roost.toml`). The first `make` says what it installs and
lets pip show its progress.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.fake_openai import FakeOpenAI, last_user_text
from tests.spine.terminal_pty import ROOST
from tests.waits import HANG_S

KEY = "sk-test-key-000000000000"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, models=["m1"]) as server:
        yield server


def bare_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    return env | {"ROOST_HOME": str(home), "ROOST_CONFIG": os.environ["ROOST_CONFIG"]}


def model_env(home: Path, fake: FakeOpenAI) -> dict[str, str]:
    return bare_env(home) | {
        "ROOST_LLM__BASE_URL": fake.base_url,
        "ROOST_LLM__API_KEY": KEY,
        "ROOST_LLM__MODEL": "m1",
    }


async def run(args: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        *args,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), HANG_S)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_send_without_a_model_exits_78_and_says_how(home: Path) -> None:
    code, out, err = await run(["send", "hello"], bare_env(home))
    assert (code, out) == (78, "")
    assert "no model is configured" in err
    assert "ROOST_LLM__BASE_URL" in err and "--offline" in err
    assert os.environ["ROOST_CONFIG"] in err  # names the file to edit


async def test_send_without_a_model_still_runs_commands_and_offline(home: Path) -> None:
    env = bare_env(home)
    code, out, _ = await run(["send", "/whoami"], env)
    assert code == 0 and "Tenant: local" in out
    code, out, _ = await run(["send", "--offline", "hello"], env)
    assert code == 0 and "No model is configured" in out
    code, out, _ = await run(["send", "hello"], env | {"ROOST_LLM__PROVIDER": "offline"})
    assert code == 0 and 'set to `provider = "offline"`' in out  # offline chosen on purpose


async def test_send_dash_reads_the_message_from_stdin(home: Path, fake: FakeOpenAI) -> None:
    env = model_env(home, fake)
    code, out, _ = await run(["send", "-"], env, b"two lines\nof text\n")
    assert code == 0 and out == "echo: two lines\nof text\n"
    assert last_user_text(fake.requests[-1]) == "two lines\nof text"
    code, _, err = await run(["send", "-"], env, b"\n")
    assert code == 2 and "empty" in err
    assert len(fake.requests) == 1
    # stdin is read only one character past the limit: the turn refuses it as too long
    small = env | {"ROOST_LIMITS__MAX_MESSAGE_CHARS": "50"}
    code, out, _ = await run(["send", "-"], small, b"y" * 50 + b"\n")
    assert code == 0 and out == "echo: " + "y" * 50 + "\n"
    code, out, err = await run(["send", "-"], small, b"z" * 4_000_000)
    assert (code, out) == (2, "") and "longer than 50 characters" in err
    assert len(fake.requests) == 2


async def serve_model_line(env: dict[str, str]) -> str:
    """Start `roost serve`, return its `roost: model ...` line, stop it."""
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "serve", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(HANG_S):
            while not (line := (await proc.stdout.readline()).decode()).startswith("roost: model"):
                assert line, (await proc.communicate())[1].decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), HANG_S)
    return line


@pytest.mark.parametrize("named", [False, True], ids=["default-path", "ROOST_CONFIG"])
async def test_every_command_reads_the_same_file(
    tmp_path: Path, home: Path, fake: FakeOpenAI, named: bool
) -> None:
    user_home = tmp_path / "user"
    default = user_home / ".config" / "roost" / "roost.toml"
    path = tmp_path / "elsewhere.toml" if named else default
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[llm]\nbase_url = "{fake.base_url}"\napi_key = "{KEY}"\nmodel = "m1"\n'
        "[web]\nport = 0\n[tenants.carol]\ntelegram_ids = [4242]\n"
    )
    env = {k: v for k, v in bare_env(home).items() if k != "ROOST_CONFIG"} | {
        "HOME": str(user_home)
    }
    if named:
        env["ROOST_CONFIG"] = str(path)
    code, out, _ = await run(["send", "hi"], env)
    assert (code, out) == (0, "echo: hi\n")
    code, out, _ = await run(["chat"], env, b"hello\n")
    assert (code, out) == (0, "echo: hello\n\n")
    code, out, _ = await run(["doctor"], env)
    assert str(path) in out
    code, out, _ = await run(["access", "list"], env)
    assert "carol" in out and "4242" in out
    assert "openai model=m1" in await serve_model_line(env)  # not offline: the file was read


def test_make_says_what_it_installs_and_pip_shows_progress(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    fake_python = venv / "bin" / "python"  # records how pip would be called
    fake_python.write_text('#!/bin/sh\necho "python $*"\n')
    fake_python.chmod(0o755)
    done = subprocess.run(
        ["make", "-s", "-C", str(REPO), f"VENV={venv}", f"{venv}/.installed-stamp"],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=True,
    )
    lines = done.stdout.splitlines()
    pip = next(i for i, line in enumerate(lines) if line.startswith("python -m pip install"))
    assert any(re.search(r"installing .*dependencies", line) for line in lines[:pip])
    assert "--quiet" not in lines[pip] and " -q" not in lines[pip]
    assert (venv / ".installed-stamp").exists()
