"""Every field of a net response a tool sees passes the masker (issue 21,
item 6): a real HTTPS server on 127.0.0.1 echoes the secret it received into a
header NAME (as sent, upper and lower case), a header value, the body (as
sent and lower-cased), the
final URL after a redirect, and the name of an undeclared host a redirect
points to. What the broker hands back (status, header names and values, text,
url, error) must hold the value in no case, only `[vault:api_key]` where the
value stood. Before this change header names, re-cased copies and refusal
texts were not masked.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web

from forge.net_call import NetScope
from forge.net_rules import parse_hosts
from forge.protocol.net import NetAnswer, NetRequest
from forge.runner import SandboxRunner
from tests.forge.tls_server import tls_server, trusting_broker
from tests.waits import HANG_S

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI"),
]
VALUE = "SkTest9f8e7D6c5B4a3Z2y1X0"  # mixed case: header names come back lower-cased


async def _name(request: web.Request) -> web.Response:
    token = request.headers["Authorization"]
    resp = web.Response(text="ok")
    resp.headers[token] = "1"
    resp.headers["X-" + token.upper()] = "2"
    resp.headers["X-Echo"] = token
    return resp


async def _body(request: web.Request) -> web.Response:
    token = request.headers["Authorization"]
    return web.Response(text=f"<p>{token}</p> {token.lower()}")


async def _to_path(request: web.Request) -> web.Response:
    raise web.HTTPFound("/final/" + request.headers["Authorization"])


async def _final(request: web.Request) -> web.Response:
    return web.Response(text="landed")


async def _to_host(request: web.Request) -> web.Response:
    token = request.headers["Authorization"]
    raise web.HTTPFound(f"https://{token}.example.test/")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[int, Path]]:
    routes = (
        ("/name", _name),
        ("/body", _body),
        ("/to-path", _to_path),
        ("/final/{rest}", _final),
        ("/to-host", _to_host),
    )
    async with tls_server(tmp_path_factory.mktemp("tls"), routes) as served:
        yield served


_broker = trusting_broker


async def _fetch(port: int, crt: Path, path: str) -> NetAnswer:
    broker = _broker(port, crt)
    call = broker.open_call(
        tool="me.t",
        network=parse_hosts([f"127.0.0.1:{port}"]),
        secrets={"api_key": VALUE},
        deadline=time.monotonic() + 30,
        rate_key="t",
        on_http=None,
    )
    request = NetRequest(
        "GET", f"https://127.0.0.1:{port}{path}", headers=(("Authorization", (("v", "api_key"),)),)
    )
    try:
        return await broker.fetch(call, request)
    finally:
        await broker.close_call(call)


def _seen(answer: NetAnswer) -> str:
    """Every field the tool receives, as one text."""
    return json.dumps(dataclasses.asdict(answer))


def _assert_masked(answer: NetAnswer) -> None:
    seen = _seen(answer)
    assert VALUE.lower() not in seen.lower(), seen


async def test_header_names_are_masked(server: tuple[int, Path]) -> None:
    answer = await _fetch(*server, "/name")
    assert answer.ok, answer.error
    _assert_masked(answer)
    names = [k for k, _ in answer.headers]
    assert "[vault:api_key]" in names and "x-[vault:api_key]" in names, names
    assert ("x-echo", "[vault:api_key]") in answer.headers


async def test_body_is_masked(server: tuple[int, Path]) -> None:
    answer = await _fetch(*server, "/body")
    assert answer.ok
    assert answer.text == "<p>[vault:api_key]</p> [vault:api_key]", answer.text
    _assert_masked(answer)


async def test_final_url_is_masked(server: tuple[int, Path]) -> None:
    answer = await _fetch(*server, "/to-path")
    assert answer.ok and answer.text == "landed"
    assert answer.url.endswith("/final/[vault:api_key]"), answer.url
    _assert_masked(answer)


async def test_a_redirect_to_an_undeclared_host_does_not_name_it(server: tuple[int, Path]) -> None:
    answer = await _fetch(*server, "/to-host")
    assert not answer.ok
    assert "not declared" in answer.error, answer.error
    _assert_masked(answer)


async def test_a_tool_sees_masked_header_names(server: tuple[int, Path], workspace: Path) -> None:
    """End to end: the names reach the tool's `r.headers` masked."""
    port, crt = server
    runner = SandboxRunner(default_timeout_s=HANG_S, broker=_broker(port, crt))
    await runner.start()
    try:
        src = (
            f'import net\nSECRETS = ["api_key"]\nNETWORK = ["127.0.0.1:{port}"]\n\n'
            "def run():\n"
            '    """Read the headers."""\n'
            f'    r = net.get("https://127.0.0.1:{port}/name", '
            'headers={"Authorization": secret("api_key")})\n'
            "    return sorted(r.headers)\n"
        )
        res = await runner.run(src, {}, workspace, {"api_key": VALUE}, net=NetScope("me.t", None))
    finally:
        await runner.aclose()
    assert res.ok, res
    assert "[vault:api_key]" in res.result
    assert VALUE.lower() not in json.dumps(res.result).lower()
