"""The real daemon speaks the systemd notify protocol to a datagram socket the test owns.

`roost serve` runs as a subprocess with `NOTIFY_SOCKET` (a path, or an abstract
`@name`) and `WATCHDOG_USEC`; the test reads the datagrams systemd would get:
READY=1 with a STATUS= line after the web channel is up, WATCHDOG=1 pings
while it runs, a STATUS= that counts a served turn, STOPPING=1 on SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from bridge.app.notify import Notifier, socket_address, watchdog_interval
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import ROOST, env_for
from tests.waits import HANG_S


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


@pytest.fixture(params=["path", "abstract"])
def listener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if request.param == "path":
        where = str(tmp_path / "notify.sock")
        sock.bind(where)
    else:
        sock.bind(b"\0roost-test-" + os.urandom(6).hex().encode())
        where = "@" + sock.getsockname()[1:].decode()
    sock.setblocking(False)
    yield sock, where
    sock.close()


async def next_message(sock: socket.socket) -> dict[str, str]:
    """The next datagram as KEY -> value (a safety-net timeout, not a speed check)."""
    loop = asyncio.get_running_loop()
    data = await asyncio.wait_for(loop.sock_recv(sock, 4096), HANG_S)
    return dict(line.split("=", 1) for line in data.decode().splitlines())


async def until(sock: socket.socket, key: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """Read messages until one carries `key`; also return the ones before it."""
    seen: list[dict[str, str]] = []
    while True:
        message = await next_message(sock)
        if key in message:
            return message, seen
        seen.append(message)


async def test_ready_status_watchdog_stopping(
    home: Path, fake: FakeOpenAI, listener: tuple[socket.socket, str]
) -> None:
    sock, where = listener
    env = env_for(home, fake) | {"NOTIFY_SOCKET": where, "WATCHDOG_USEC": "400000"}
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "serve", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        ready, before = await until(sock, "READY")
        assert before == []  # nothing claims readiness before the channels are up
        assert ready["READY"] == "1" and ready["MAINPID"] == str(proc.pid)
        assert ready["STATUS"].startswith("channels: web; turns served: 0; backend: ")
        assert "m1" in ready["STATUS"]
        port = await web_port(proc)
        token = (home / "web-token").read_text().strip()
        async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
            r = await http.post(
                "/api/chat", json={"text": "hi"}, headers={"Authorization": f"Bearer {token}"}
            )
            assert (await r.json())["reply"] == "echo: hi"
        status, between = await until(sock, "STATUS")
        assert status["STATUS"].startswith("channels: web; turns served: 1; backend: ")
        assert all(m == {"WATCHDOG": "1"} for m in between)
        # pings keep coming while the daemon idles: five more (a bounded wait, no timing)
        for _ in range(5):
            await until(sock, "WATCHDOG")
        proc.send_signal(signal.SIGTERM)
        stopping, _ = await until(sock, "STOPPING")
        assert stopping["STOPPING"] == "1"
        _, err = await asyncio.wait_for(proc.communicate(), HANG_S)
        assert proc.returncode == 0, err.decode()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def web_port(proc: asyncio.subprocess.Process) -> int:
    import re

    assert proc.stdout is not None
    while True:
        line = (await asyncio.wait_for(proc.stdout.readline(), HANG_S)).decode()
        assert line, "daemon closed stdout"
        match = re.search(r"web chat at http://127\.0\.0\.1:(\d+)/", line)
        if match:
            return int(match.group(1))


def test_without_notify_socket_nothing_is_sent() -> None:
    env = {"PATH": "/bin"}
    notifier = Notifier.from_env(env)
    assert not notifier.enabled and not notifier.ready("x")


def test_notify_socket_is_removed_from_the_environment_children_inherit() -> None:
    env = {"NOTIFY_SOCKET": "@x"}
    assert Notifier.from_env(env).address == b"\0x" and "NOTIFY_SOCKET" not in env


@pytest.mark.parametrize("value", ["", "@", "relative/path", "vsock:2:1234"])
def test_unusable_addresses_are_ignored(value: str) -> None:
    assert socket_address(value) is None


def test_watchdog_interval_is_half_and_only_for_this_pid() -> None:
    assert watchdog_interval({"WATCHDOG_USEC": "30000000"}, 7) == 15.0
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"}, 7) == 15.0
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "8"}, 7) is None
    assert watchdog_interval({"WATCHDOG_USEC": "0"}, 7) is None
    assert watchdog_interval({}, 7) is None


def test_a_socket_nobody_listens_on_is_logged_not_raised(tmp_path: Path) -> None:
    notifier = Notifier(str(tmp_path / "gone.sock"))
    assert notifier.watchdog() is False
