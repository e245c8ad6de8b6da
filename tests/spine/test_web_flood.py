"""The real daemon with few descriptors, flooded: it keeps answering, its log stays small.

`roost serve` runs as a subprocess whose RLIMIT_NOFILE is set to 64 or 256
before it starts (as `LimitNOFILE=` would). Raw sockets then hold four times
that many connections with heads that never finish (slowloris), or one token
opens many event streams. Throughout, `/healthz` answers 200 (each wait has
only a generous upper bound against a hang, no speed threshold); every
slowloris socket is closed by the daemon; its stderr stays a few lines, with
no traceback (before: about 28,900 "Too many open files" tracebacks in 20 s
at 256 descriptors, and /healthz timed out throughout).
"""

from __future__ import annotations

import asyncio
import re
import resource
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for
from tests.waits import shut

WAIT_S = 120.0  # a safety net against a hang, never a speed check
ROOST = [sys.executable, "-m", "bridge.cli.main"]


def limited(n: int) -> Callable[[], None]:
    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return lower


class Limited:
    """A daemon with `n` descriptors; stderr goes to a file to be measured."""

    def __init__(self, proc: asyncio.subprocess.Process, port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log

    async def stop(self) -> str:
        self.proc.terminate()
        async with asyncio.timeout(WAIT_S):
            await self.proc.wait()
        assert self.proc.returncode == 0, self.log.read_text()[-3000:]
        return self.log.read_text()


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


async def start(env: dict[str, str], limit: int, log: Path) -> Limited:
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            *ROOST,
            "serve",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            preexec_fn=limited(limit),
        )
    assert proc.stdout is not None
    port = 0
    async with asyncio.timeout(WAIT_S):
        while True:
            line = (await proc.stdout.readline()).decode()
            assert line, "the daemon exited early (see its stderr log)"
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            port = int(found.group(1)) if found else port
            if line.startswith("roost: model"):
                return Limited(proc, port, log)


async def healthz(port: int) -> int:
    async with asyncio.timeout(WAIT_S):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        status = int((await reader.readline()).split()[1])
        await shut(writer)
        return status


@pytest.mark.parametrize("limit", [64, 256])
async def test_slowloris_with_few_descriptors(
    home: Path, fake: FakeOpenAI, tmp_path: Path, limit: int
) -> None:
    env = env_for(home, fake) | {"ROOST_WEB__HEADER_TIMEOUT_S": "3"}
    daemon = await start(env, limit, tmp_path / "stderr.log")
    attack: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        for _ in range(4 * limit):
            reader, writer = await asyncio.open_connection("127.0.0.1", daemon.port)
            writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the rest
            attack.append((reader, writer))
        for _ in range(5):
            assert await healthz(daemon.port) == 200
        async with asyncio.timeout(WAIT_S):
            for reader, _ in attack:
                said = await reader.read()  # until the daemon closes it
                assert said == b"" or said.startswith(b"HTTP/1.1 503"), said[:200]
        assert await healthz(daemon.port) == 200
    finally:
        for _, writer in attack:
            await shut(writer)
    log = await daemon.stop()
    lines = log.splitlines()
    assert "Traceback" not in log and len(lines) < 40, log[-3000:]
    assert "Too many open files" not in log or len(re.findall("Too many open", log)) <= 4


async def test_an_event_stream_flood_from_one_token(
    home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    daemon = await start(env_for(home, fake), 256, tmp_path / "stderr.log")
    token = (home / "web-token").read_text().strip()
    request = (
        f"GET /api/events?chat=c HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n"
        f"Authorization: Bearer {token}\r\n\r\n"
    ).encode()
    streams: list[asyncio.StreamWriter] = []
    statuses: list[int] = []
    try:
        async with asyncio.timeout(WAIT_S):
            for _ in range(300):
                reader, writer = await asyncio.open_connection("127.0.0.1", daemon.port)
                writer.write(request)
                head = await reader.readline()
                statuses.append(int(head.split()[1]) if head.startswith(b"HTTP/") else 0)
                streams.append(writer)
        assert statuses.count(200) == 8  # [web] streams_per_token
        assert set(statuses) <= {200, 429, 503}
        assert await healthz(daemon.port) == 200
    finally:
        for writer in streams:
            await shut(writer)
    log = await daemon.stop()
    assert "Traceback" not in log and len(log.splitlines()) < 40, log[-3000:]
