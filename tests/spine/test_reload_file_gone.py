"""A config file that vanished or is empty is refused on reload; the old one stays.

The real daemon (web only, a notify socket the test owns), with a tenant whose
web token signs in. `mv roost.toml aside` (no `ROOST_CONFIG`: the default file
`make run` reads) or `: > roost.toml` (with `ROOST_CONFIG`) used to be reloaded as
the built-in defaults: every tenant dropped, `[llm]` pointed at api.openai.com,
logged at INFO only. Now each is refused with one ERROR line naming the file and
the tenant still signs in; the file put back applies again.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for
from tests.spine.test_reload import Daemon, config, reloaded, settled, started, write_config
from tests.spine.test_reload import notify as notify  # the fixture
from tests.waits import until

TOKEN = "bob-page-token-7f3a9c21"
CONFIG = config(extra=f'web_token = "{TOKEN}"\n')


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


async def bob_signs_in(daemon: Daemon) -> bool:
    (line,) = daemon.lines("web bridge listening on")
    base = line.split("listening on ")[1].strip().rstrip("/")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    url = f"{base}/api/history?chat=default"
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as resp:
        return resp.status == 200


async def refused_once(daemon: Daemon, sock: socket.socket, reason: str) -> None:
    """The change was refused (STATUS), with one ERROR line naming `reason`, even when
    asked again (the watcher and SIGHUP both ask)."""
    assert (await reloaded(sock))["STATUS"].startswith("reload refused"), daemon.log
    await settled(daemon)
    (error,) = daemon.lines("reload refused")
    assert "ERROR" in error and reason in error, error
    assert not daemon.lines("reloaded the configuration")
    assert not daemon.lines("api.openai.com")


async def test_a_moved_away_default_config_is_refused(
    home: Path, tmp_path: Path, model: FakeOpenAI, notify: tuple[socket.socket, str]
) -> None:
    user = tmp_path / "user-home"
    folder = user / ".config" / "roost"
    folder.mkdir(parents=True)
    path = folder / "roost.toml"
    path.write_text(CONFIG)
    env = {k: v for k, v in env_for(home, model).items() if k != "ROOST_CONFIG"}
    env["HOME"] = str(user)
    async with started(env, notify, "web") as daemon:
        assert await bob_signs_in(daemon)
        aside = tmp_path / "aside.toml"
        shutil.move(path, aside)  # `mv roost.toml roost.toml.bak`, to edit a copy
        await refused_once(daemon, notify[0], f"{path} is gone (moved or deleted)")
        assert await bob_signs_in(daemon)  # the tenants in force are kept

        shutil.move(aside, path)  # put back: read again
        await until(lambda: daemon.lines("reloaded the configuration"), "the file back")
        assert "2 tenants configured" in daemon.lines("reloaded the configuration")[0]
        assert await bob_signs_in(daemon)


async def test_an_emptied_config_is_refused(
    home: Path, model: FakeOpenAI, notify: tuple[socket.socket, str]
) -> None:
    path = Path(os.environ["ROOST_CONFIG"])
    write_config(CONFIG)
    async with started(env_for(home, model), notify, "web") as daemon:
        write_config("")  # `: > roost.toml`, a tool that truncates, then writes
        await refused_once(daemon, notify[0], f"{path} is empty")
        assert await bob_signs_in(daemon)
        daemon.proc.send_signal(signal.SIGHUP)  # still empty: not logged again
        await settled(daemon)
        assert len(daemon.lines("reload refused")) == 1

        write_config(CONFIG + "[tenants.carol]\n")
        await until(lambda: daemon.lines("3 tenants configured"), "the written file")
