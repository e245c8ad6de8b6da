"""`import net` end to end: a real sandbox child, the real broker, a real HTTPS
server on 127.0.0.1 with a self-signed certificate made here by the openssl
CLI (trusted through the broker's injected SSL context, and listed in
private_hosts). What the server receives and what the tool sees are checked."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from forge.broker import Broker
from forge.library import sha256_text
from forge.net_call import HttpEvent, NetScope
from forge.runner import SandboxRunner
from forge.schema import describe_tool
from tests.forge.helpers import parent_of
from tests.waits import HANG_S

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI"),
]
VALUE = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


class Api:
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.port = 0

    async def echo(self, request: web.Request) -> web.Response:
        body = await request.text()
        rec = {"headers": dict(request.headers), "query": dict(request.query), "body": body}
        self.seen.append(rec)
        return web.json_response(rec)

    async def big(self, request: web.Request) -> web.Response:
        return web.Response(body=b"x" * (2 << 20))

    async def redirect(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(f"https://localhost:{self.port}/echo")


def _cert(tmp: Path) -> tuple[Path, Path]:
    key, crt = tmp / "key.pem", tmp / "crt.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(crt), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return key, crt


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Api, Path]]:
    key, crt = _cert(tmp_path_factory.mktemp("tls"))
    srv_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    srv_ctx.load_cert_chain(crt, key)
    state = Api()
    app = web.Application()
    app.router.add_route("*", "/echo", state.echo)
    app.router.add_get("/big", state.big)
    app.router.add_get("/redirect", state.redirect)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=srv_ctx)
    await site.start()
    state.port = runner.addresses[0][1]
    yield state, crt
    await runner.cleanup()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sandbox(api: tuple[Api, Path]) -> AsyncIterator[SandboxRunner]:
    state, crt = api
    ctx = ssl.create_default_context(cafile=str(crt))
    broker = Broker(private_hosts=(f"127.0.0.1:{state.port}",), ssl_context=ctx)
    r = SandboxRunner(default_timeout_s=HANG_S, broker=broker)
    await r.start()
    yield r
    await r.aclose()


def tool(port: int, body: str, secrets: str = '["api_key"]') -> str:
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return (
        f"import net\nSECRETS = {secrets}\n"
        f'NETWORK = ["127.0.0.1:{port}", "localhost:{port}"]\n'
        f'BASE = "https://127.0.0.1:{port}"\n\n'
        f'def run():\n    """A net tool."""\n{lines}\n'
    )


async def test_the_secret_arrives_where_the_tool_put_it_and_nowhere_else(
    api: tuple[Api, Path], sandbox: SandboxRunner, workspace: Path
) -> None:
    state, _ = api
    events: list[HttpEvent] = []

    async def on_http(event: HttpEvent) -> None:
        events.append(event)

    src = tool(
        state.port,
        """
key = secret("api_key")
print(key)
r = net.post(BASE + "/echo", json={"token": key, "n": [1, "Bearer " + key]},
             headers={"Authorization": "Bearer " + key})
r2 = net.get(BASE + "/echo", params={"q": key, "plain": "x"})
return {"echo": r.json(), "q": r2.json()["query"], "handle": str(key), "status": r.status}
""",
    )
    res = await sandbox.run(src, {}, workspace, {"api_key": VALUE}, net=NetScope("me.t", on_http))
    assert res.ok, res
    post, get = state.seen[-2:]
    assert post["headers"]["Authorization"] == f"Bearer {VALUE}"
    assert json.loads(post["body"]) == {"token": VALUE, "n": [1, f"Bearer {VALUE}"]}
    assert get["query"] == {"q": VALUE, "plain": "x"}
    # What the tool saw, returned and printed holds handles, never the value.
    everything = json.dumps(res.result) + res.printed
    assert VALUE not in everything
    assert res.result["handle"] == "[vault:api_key]" and "[vault:api_key]" in res.printed
    assert res.result["echo"]["headers"]["Authorization"] == "Bearer [vault:api_key]"
    assert [(e.host, e.declared, e.method, e.status, e.outcome) for e in events] == [
        ("127.0.0.1", True, "POST", 200, "ok"),
        ("127.0.0.1", True, "GET", 200, "ok"),
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # a computed host (a literal one is a lint finding: tests/forge/test_lint_net.py)
        ('h = "example.com"\nnet.get(f"https://{h}/")', "host example.com is not declared"),
        ('net.get(f"https://localhost:{PORT}/echo")', "resolves to a loopback address"),
        ('net.get(BASE + "/redirect")', "resolves to a loopback address"),
        ('net.get(BASE + "/big")', "larger than 1048576 bytes"),
        ('net.get(f"http://localhost:{PORT}/echo")', "only https is allowed"),
        ('net.get(BASE + "/echo", headers={"X": f"{secret(\'api_key\')}"})', "Build it with +"),
        ('net.get(BASE + "/echo?k=" + secret("api_key"))', "may not stand in the URL"),
        ('net.get(secret("api_key"))', "may not stand in the URL"),
        ("[net.get(BASE + '/echo') for i in range(21)]", "at most 20 requests"),
    ],
)
async def test_refused_with_a_clear_error(
    api: tuple[Api, Path], sandbox: SandboxRunner, workspace: Path, body: str, expected: str
) -> None:
    state, _ = api
    src = tool(state.port, f"PORT = {state.port}\n{body}\nreturn 1")
    res = await sandbox.run(src, {}, workspace, {"api_key": VALUE})
    assert not res.ok and res.error_kind == "runtime"
    assert expected in res.error_message, res.error_message
    assert VALUE not in res.error_message


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ('{"Host\\t": "internal.example"}', "not a valid HTTP field name"),
        ('{"Transfer-Encoding\\t": "chunked"}', "not a valid HTTP field name"),
        ('{"Transfer-Encoding ": "chunked"}', "not a valid HTTP field name"),
        ('{"X-A\\x0bB": "1"}', "not a valid HTTP field name"),
        ('{"X-\\u00e9": "1"}', "not a valid HTTP field name"),
        ('{"": "1"}', "not a valid HTTP field name"),
        ('{"TE": "trailers"}', "may not be set"),
        ('{"Upgrade": "h2c"}', "may not be set"),
        ('{"X-A": "1\\r\\nHost: internal.example"}', "holds a line break"),
        ('{"X-A": "Bearer " + secret("api_key") + "\\x00"}', "holds a line break"),
    ],
)
async def test_a_header_name_must_be_a_token_and_its_value_one_line(
    api: tuple[Api, Path], sandbox: SandboxRunner, workspace: Path, headers: str, expected: str
) -> None:
    """atk3 F2: `Host\\t` passed the forbidden-name check and went on the wire as
    `Host\\t: ...` (a second Host to a lenient front end; `Transfer-Encoding\\t`
    a smuggling primitive). Nothing of such a request reaches the server."""
    state, _ = api
    before = len(state.seen)
    body = f'net.get(BASE + "/echo", headers={headers})\nreturn 1'
    res = await sandbox.run(tool(state.port, body), {}, workspace, {"api_key": VALUE})
    assert not res.ok and res.error_kind == "runtime", res
    assert expected in res.error_message, res.error_message
    assert VALUE not in res.error_message
    assert len(state.seen) == before


async def test_the_tool_can_catch_net_error(
    api: tuple[Api, Path], sandbox: SandboxRunner, workspace: Path
) -> None:
    state, _ = api
    # a computed host: a literal undeclared one is refused by the linter (F048)
    body = (
        'h = "example.org"\ntry:\n    net.get(f"https://{h}/")\n'
        "except net.NetError as e:\n    return str(e)"
    )
    res = await sandbox.run(tool(state.port, body), {}, workspace, {"api_key": VALUE})
    assert res.ok and "not declared" in res.result


async def test_a_changed_network_declaration_changes_the_pinned_hash() -> None:
    a = tool(443, "return 1").replace('"localhost:443"', '"api.example.com"')
    b = a.replace('"api.example.com"', '"evil.example.com"')
    assert describe_tool(a).network != describe_tool(b).network
    assert sha256_text(a) != sha256_text(b)


async def test_a_call_without_network_consent_reaches_no_host(
    api: tuple[Api, Path], sandbox: SandboxRunner, workspace: Path
) -> None:
    """A draft (not saved yet, so its NETWORK is not consented to) gets no broker."""
    state, _ = api
    seen = len(state.seen)
    src = tool(state.port, 'net.get(BASE + "/echo")\nreturn 1', secrets="[]")
    res = await sandbox.run(src, {}, workspace, {}, net=NetScope("me.t", None, allowed=False))
    assert not res.ok and "not available to this tool" in res.error_message
    assert len(state.seen) == seen  # nothing reached the server


async def test_the_per_tenant_rate_limit_refuses_then_recovers(
    api: tuple[Api, Path], workspace: Path
) -> None:
    state, crt = api
    # The broker's clock also bounds each call by its deadline (time.monotonic), so the
    # first call runs a minute "in the past" and the second one at the real time.
    offset = [-61.0]
    broker = Broker(
        private_hosts=(f"127.0.0.1:{state.port}",),
        ssl_context=ssl.create_default_context(cafile=str(crt)),
        rate_per_minute=3,
        clock=lambda: time.monotonic() + offset[0],
    )
    runner = SandboxRunner(default_timeout_s=HANG_S, broker=broker)
    await runner.start()
    try:
        body = "out = []\nfor i in range(4):\n    try:\n        out.append(net.get(BASE + '/echo').status)\n    except net.NetError as e:\n        out.append(str(e))\nreturn out"  # noqa: E501
        first = await runner.run(tool(state.port, body, secrets="[]"), {}, workspace)
        assert first.ok, first
        assert first.result[:3] == [200, 200, 200]
        assert "more than 3 requests a minute" in first.result[3]
        offset[0] = 0.0  # a minute later the tenant may call again
        again = await runner.run(tool(state.port, body, secrets="[]"), {}, workspace)
        assert again.ok and again.result[0] == 200
    finally:
        await runner.aclose()


async def test_a_forked_helpers_child_gets_its_net_requests_answered(
    api: tuple[Api, Path], sandbox: SandboxRunner, workspace: Path, tmp_path: Path
) -> None:
    """A second tenant's helper is forked from the runner's template: its children's
    `net` requests come over its stdout and their answers go back on its stdin."""
    state, _ = api
    body = 'r = net.post(BASE + "/echo", json={"k": secret("api_key")})\nreturn r.status'
    assert (await sandbox.run(tool(state.port, "return 0"), {}, workspace)).ok  # the first helper
    other = tmp_path / "another-tenant"
    os.makedirs(other)
    res = await sandbox.run(tool(state.port, body), {}, other, {"api_key": VALUE})
    assert res.ok and res.result == 200, res
    assert json.loads(state.seen[-1]["body"]) == {"k": VALUE}
    helper = sandbox.helper_pid(other)
    assert helper is not None and helper != sandbox.helper_pid(workspace)
    assert parent_of(helper) == sandbox.template_pid()
