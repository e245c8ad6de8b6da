"""A reload that would drop every tenant at once is refused, naming them; a restart
applies it.

A roost.toml saved half-way, or with every `[tenants.X]` commented out, still loaded
(only a vanished or blank file was refused) and was applied: every person got "Sorry,
I don't know you" from the next message on, logged at INFO only. Now the reload is
refused with one ERROR line naming the tenants and the restart that applies it; the
tenants in force still sign in, and a file with a tenant again applies as before.
The local tenant is not counted: it is there with or without `[tenants.local]`
(tests/mcp/test_client_reload_daemon.py drops that section alone, and it applies).
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for
from tests.spine.test_reload import notify as notify  # the fixture
from tests.spine.test_reload import reloaded, started, write_config
from tests.spine.test_reload_file_gone import CONFIG, bob_signs_in, refused_once
from tests.waits import until


def replace_config(text: str) -> None:
    """Write the config whole (an editor's rename-over): the watcher never sees it
    truncated, which a reload would refuse for another reason (empty)."""
    path = Path(os.environ["ROOST_CONFIG"])
    fresh = path.with_name(f".{path.name}.new")
    fresh.write_text(text)
    fresh.replace(path)


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


async def test_a_config_without_any_tenant_is_refused_on_reload(
    home: Path, model: FakeOpenAI, notify: tuple[socket.socket, str]
) -> None:
    path = Path(os.environ["ROOST_CONFIG"])
    write_config(CONFIG)
    async with started(env_for(home, model), notify, "web") as daemon:
        commented = "".join(f"# {line}\n" for line in CONFIG.splitlines())
        replace_config(commented)  # every tenant commented out: not blank, no tenant
        await refused_once(
            daemon,
            notify[0],
            f"{path}: no tenant is configured any more (there were alice, bob): every person "
            "would be refused from their next message on; if that is meant, restart roost",
        )
        assert await bob_signs_in(daemon)  # the tenants in force are kept

        replace_config(CONFIG + "[tenants.carol]\n")
        assert (await reloaded(notify[0]))["STATUS"] == "reloaded"  # its READY=1 read here
        await until(lambda: daemon.lines("3 tenants configured"), "the written file")

    write_config(commented)
    async with started(env_for(home, model), notify, "web") as daemon:  # a restart applies it
        assert not daemon.lines("reload refused")
        assert not await bob_signs_in(daemon)


def test_the_local_tenant_alone_is_not_counted(home: Path) -> None:
    from bridge.app.reload import every_tenant_dropped
    from bridge.core.config import load_settings

    write_config("[tenants.local]\n")
    local = load_settings()
    write_config("[tenants.alice]\n")
    alice = load_settings()
    write_config("# nothing\n")
    none = load_settings()
    assert every_tenant_dropped(local, none, None) is None  # the local tenant stays anyway
    said = every_tenant_dropped(alice, none, None)
    assert said is not None and said.startswith(
        "the configuration: no tenant is configured any more"
    )
    assert every_tenant_dropped(alice, local, None) is not None  # alice would be refused
    assert every_tenant_dropped(none, alice, None) is None
