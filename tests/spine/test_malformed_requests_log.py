"""A request aiohttp cannot parse is logged as one WARNING naming its kind, never as an
ERROR with a traceback quoting the request's bytes (`logging_setup.MalformedRequests`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from bridge.app.logging_setup import MalformedRequests, setup_logging

LONG = b"Bearer " + b"a" * 9000  # past aiohttp's 8190 bytes for a header line


@pytest.fixture
async def port() -> AsyncIterator[int]:
    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", ok)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = logging.getLogger("aiohttp.server")
    kept = MalformedRequests()
    server.addFilter(kept)
    try:
        yield runner.addresses[0][1]
    finally:
        server.removeFilter(kept)
        await runner.cleanup()


async def _raw(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await reader.read(65536)
    writer.close()
    await writer.wait_closed()
    return answer


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: " + LONG + b"\r\n\r\n",
        b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n",
    ],
    ids=["long header", "long URL", "broken header"],
)
async def test_one_warning_without_the_request(
    port: int, caplog: pytest.LogCaptureFixture, request_bytes: bytes
) -> None:
    with caplog.at_level(logging.DEBUG, logger="aiohttp.server"):
        answer = await _raw(port, request_bytes)
    assert answer.split(b" ", 2)[1] == b"400"
    logged = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert [r.levelname for r in logged] == ["WARNING"], [r.getMessage() for r in logged]
    (record,) = logged
    assert record.getMessage().startswith("web: refused a malformed request from 127.0.0.1 (")
    assert record.exc_info is None and "aaaa" not in record.getMessage()


async def test_other_server_errors_keep_their_traceback(caplog: pytest.LogCaptureFixture) -> None:
    try:
        raise RuntimeError("a handler bug")
    except RuntimeError:
        record = logging.LogRecord(
            "aiohttp.server", logging.ERROR, __file__, 1, "Error handling request from %s",
            ("127.0.0.1",), exc_info=__import__("sys").exc_info(),
        )  # fmt: skip
    assert MalformedRequests().filter(record)
    assert record.levelname == "ERROR" and record.exc_info is not None


def test_setup_logging_installs_it_once(capsys: pytest.CaptureFixture[str]) -> None:
    server = logging.getLogger("aiohttp.server")
    before = list(server.filters)
    try:
        setup_logging("INFO", [], "text")
        setup_logging("INFO", [], "text")
        assert sum(isinstance(f, MalformedRequests) for f in server.filters) == 1
    finally:
        server.filters[:] = before
