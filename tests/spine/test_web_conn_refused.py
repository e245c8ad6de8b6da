"""A refusal for want of credentials, or a pipeline past its cap, ends its connection:
what the client pipelined behind it is never read.

Raw sockets against the real web app on 127.0.0.1. A tokenless client that
pipelines thousands of requests and never reads the 401s (each small enough
for the socket buffers, so its writes never pause and no stall rule fires)
had the server answer every one of them, each connection busy for good: from
26 addresses, legitimate requests waited up to 18 s. Now a 401 or 403 closes
the connection once sent, and so does an answer once the client pipelined
more than `PIPELINED_MAX` requests (the same flood with `/healthz`, no
token needed); a client with the token that waits for its answers keeps
its connection.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bridge.channels.web.conns import ConnLimits
from bridge.channels.web.site import PIPELINED_MAX
from tests.spine.test_web_evict import js, started  # noqa: F401  (js: a fixture)
from tests.waits import HANG_S, shut

TOKEN = "t" * 20


async def answers(port: int, headers: str, count: int, path: str = "/api/commands") -> int:
    """How many answers `count` pipelined `GET path` get, all sent in one write (the last
    one asks to close, so the connection ends whatever the server does)."""
    one = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}"
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            (one + "\r\n").encode() * (count - 1) + (one + "Connection: close\r\n\r\n").encode()
        )
        await writer.drain()
        async with asyncio.timeout(HANG_S):
            return (await reader.read()).count(b"HTTP/1.1 ")
    finally:
        await shut(writer)


async def test_a_401_closes_its_connection_a_token_keeps_it(js: Path) -> None:  # noqa: F811
    limits = ConnLimits(max_total=16, per_client=4, fd_ceiling=1 << 30)
    web = await started(js, limits)
    try:
        assert await answers(web.port, "", 4) == 1
        assert await answers(web.port, "Authorization: Bearer wrong-token-000000\r\n", 4) == 1
        assert await answers(web.port, f"Authorization: Bearer {TOKEN}\r\n", 4) == 4
    finally:
        await web.stop()


async def test_a_long_pipeline_is_cut_after_its_cap(js: Path) -> None:  # noqa: F811
    limits = ConnLimits(max_total=16, per_client=4, fd_ceiling=1 << 30)
    web = await started(js, limits)
    try:
        assert await answers(web.port, "", 100, "/healthz") == PIPELINED_MAX + 1
        bearer = f"Authorization: Bearer {TOKEN}\r\n"
        assert await answers(web.port, bearer, 100) == PIPELINED_MAX + 1
        assert await answers(web.port, "", PIPELINED_MAX, "/healthz") == PIPELINED_MAX
    finally:
        await web.stop()
