"""A reload that fails in a way nobody planned for leaves the daemon reloading on.

The real daemon (web only, a notify socket the test owns): a Latin-1 byte appended
to roost.toml (the watcher sees it; no signal) is refused with one ERROR line
saying the file is not UTF-8, systemd hears READY=1 after RELOADING=1, and a
later good file applied by SIGHUP is in force; a byte-order mark likewise. And
`Reloader.run` itself outlives any exception of one reload: one ERROR line with
the reason, READY=1 again, the old configuration kept, the next reload applied.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.notify import Notifier
from bridge.app.reload import Reloader
from bridge.core.config import Settings, load_settings
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for
from tests.spine.test_reload import config, reloaded, started, write_config
from tests.spine.test_reload import notify as notify  # the fixture
from tests.waits import until


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


def saved(path: Path, data: bytes) -> None:
    """As editors save: written aside, renamed over (the watcher never sees half a file)."""
    fresh = path.with_suffix(".new")
    fresh.write_bytes(data)
    fresh.replace(path)


def appended(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


async def test_a_latin1_byte_is_refused_and_later_reloads_still_apply(
    home: Path, model: FakeOpenAI, notify: tuple[socket.socket, str]
) -> None:
    path = Path(os.environ["ROOST_CONFIG"])
    write_config(config())
    async with started(env_for(home, model), notify, "web") as daemon:
        appended(path, b"# caf\xe9\n")  # an editor set to Latin-1
        done = await reloaded(notify[0])
        assert done["STATUS"].startswith("reload refused"), daemon.log
        await until(lambda: daemon.lines("reload refused"), "the ERROR line")  # read apart
        (error,) = daemon.lines("reload refused")
        assert "ERROR" in error and "not UTF-8 text (byte 0xe9 at line 5, column 6)" in error
        assert "Traceback" not in "".join(daemon.log)

        saved(path, b"\xef\xbb\xbf" + config().encode())
        daemon.proc.send_signal(signal.SIGHUP)
        assert (await reloaded(notify[0]))["STATUS"].startswith("reload refused")
        await until(lambda: len(daemon.lines("reload refused")) == 2, "the BOM's ERROR line")
        assert "starts with a byte-order mark" in daemon.lines("reload refused")[1]

        saved(path, config(extra="[tenants.carol]\n").encode())
        daemon.proc.send_signal(signal.SIGHUP)
        assert await reloaded(notify[0]) == {"READY": "1", "STATUS": "reloaded"}
        await until(lambda: daemon.lines("3 tenants configured"), "the good file in force")


async def test_the_reload_task_outlives_any_exception(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """Not only a ConfigError: whatever one reload raises (a bug, a decoder's error, a
    disk fault) is logged once with its reason; the task serves the next request."""
    sent: list[tuple[str, ...]] = []

    class Heard(Notifier):
        def send(self, *lines: str) -> bool:
            sent.append(lines)
            return True

    outcomes: list[object] = [
        UnicodeDecodeError("utf-8", b"\xe9", 0, 1, "invalid continuation byte"),
        lambda: load_settings(web={"port": 9000}),
    ]
    versions = iter(range(100))  # each request reads a changed file

    def load() -> Settings:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        assert callable(outcome)
        made = outcome()
        assert isinstance(made, Settings)
        return made

    reloader = Reloader(settings, load, Heard(None), fingerprint=lambda: str(next(versions)))
    task = asyncio.create_task(reloader.run())
    try:
        with caplog.at_level(logging.INFO, logger="roost"):
            reloader.request()
            await until(lambda: len(sent) >= 2, "READY=1 after the failed reload")
            assert not task.done()
            assert reloader.settings is settings  # the old one stays in force
            reloader.request()
            await until(lambda: reloader.reloads == 1, "the next reload")
    finally:
        task.cancel()
    assert reloader.settings.web.port == 9000
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [
        "reload refused, the old configuration stays in force: UnicodeDecodeError: "
        "'utf-8' codec can't decode byte 0xe9 in position 0: invalid continuation byte"
    ]
    assert [lines[0] for lines in sent] == ["RELOADING=1", "READY=1", "RELOADING=1", "READY=1"]
    assert sent[1][1].startswith("STATUS=reload refused")
